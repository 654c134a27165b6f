//! `k8s.io/apimachinery/pkg/labels` selectors: the lexer, the recursive-descent parser,
//! `NewRequirement`'s checks and `Requirement.Matches`, ported from `selector.go`.
//!
//! ```text
//! <selector-syntax>         ::= <requirement> | <requirement> "," <selector-syntax>
//! <requirement>             ::= [!] KEY [ <set-based-restriction> | <exact-match-restriction> ]
//! <set-based-restriction>   ::= "" | <inclusion-exclusion> <value-set>
//! <inclusion-exclusion>     ::= "in" | "notin"
//! <value-set>               ::= "(" <values> ")"
//! <values>                  ::= VALUE | VALUE "," <values>
//! <exact-match-restriction> ::= ["=" | "==" | "!=" | ">" | "<"] VALUE
//! ```
//!
//! As in Kubernetes 1.35 and later (the version `/version` reports is v1.37), `x in (a,,)`
//! is accepted: two commas in a row stand for an empty value (v1.33 and earlier skipped the
//! second comma, so an even run of commas right before `)` was an error).
//!
//! Errors carry the text `labels.Parse` returns, which is what the API server's list handler
//! sends back as a 400 `BadRequest` message (`errors.NewBadRequest(err.Error())`, no prefix).

use std::collections::BTreeMap;
use std::fmt;

use super::field::{BadValue, InvalidError, Path, aggregate};
use super::validation::{is_qualified_name, is_valid_label_value};

/// `selection.Operator`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    DoesNotExist,
    Equals,
    DoubleEquals,
    In,
    NotEquals,
    NotIn,
    Exists,
    GreaterThan,
    LessThan,
}

impl Operator {
    /// The operator's `selection.Operator` string.
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::DoesNotExist => "!",
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::In => "in",
            Operator::NotEquals => "!=",
            Operator::NotIn => "notin",
            Operator::Exists => "exists",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

/// The binary operators in upstream's order, as its "expected:" message lists them.
const BINARY_OPERATORS: [Operator; 7] = [
    Operator::In,
    Operator::NotIn,
    Operator::Equals,
    Operator::DoubleEquals,
    Operator::NotEquals,
    Operator::GreaterThan,
    Operator::LessThan,
];

/// A selector that failed to parse; the message is the API server's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

/// One requirement: key, operator and values (sorted and deduplicated, as the parser's
/// `sets.String` hands them to `NewRequirement`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// `NewRequirement`: checks the key, the number of values for the operator, that `gt`/`lt`
    /// values are integers, and every value. The error is the aggregate's message.
    pub fn new(key: &str, operator: Operator, values: Vec<String>) -> Result<Self, String> {
        let mut errs = Vec::new();
        if let Some(e) = validate_label_key(key, Path::child("key")) {
            errs.push(e);
        }
        let value_path = Path::child("values");
        let list = || BadValue::List(values.clone());
        match operator {
            Operator::In | Operator::NotIn => {
                if values.is_empty() {
                    errs.push(InvalidError::new(
                        value_path.clone(),
                        list(),
                        "for 'in', 'notin' operators, values set can't be empty",
                    ));
                }
            }
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals => {
                if values.len() != 1 {
                    errs.push(InvalidError::new(
                        value_path.clone(),
                        list(),
                        "exact-match compatibility requires one single value",
                    ));
                }
            }
            Operator::Exists | Operator::DoesNotExist => {
                if !values.is_empty() {
                    errs.push(InvalidError::new(
                        value_path.clone(),
                        list(),
                        "values set must be empty for exists and does not exist",
                    ));
                }
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errs.push(InvalidError::new(
                        value_path.clone(),
                        list(),
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if parse_int(v).is_none() {
                        errs.push(InvalidError::new(
                            value_path.index(i),
                            BadValue::Str(v.clone()),
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        ));
                    }
                }
            }
        }
        for (i, v) in values.iter().enumerate() {
            let msgs = is_valid_label_value(v);
            if !msgs.is_empty() {
                errs.push(InvalidError::new(
                    value_path.index(i).key(key),
                    BadValue::Str(v.clone()),
                    msgs.join("; "),
                ));
            }
        }
        match aggregate(&errs) {
            Some(message) => Err(message),
            None => Ok(Requirement {
                key: key.to_string(),
                operator,
                values,
            }),
        }
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn operator(&self) -> Operator {
        self.operator
    }

    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// `Requirement.Matches`: `!=` and `notin` hold when the key is missing; `gt`/`lt`
    /// compare 64-bit integers and fail when the label's value is not one.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                value.is_some_and(|v| self.values.contains(v))
            }
            Operator::NotIn | Operator::NotEquals => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(actual) = value.and_then(|v| parse_int(v)) else {
                    return false;
                };
                let [bound] = self.values.as_slice() else {
                    return false;
                };
                let Some(bound) = parse_int(bound) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    actual > bound
                } else {
                    actual < bound
                }
            }
        }
    }
}

/// `Requirement.String()`.
impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let (open, close) = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::In => (" in (", ")"),
            Operator::NotIn => (" notin (", ")"),
            Operator::Equals => ("=", ""),
            Operator::DoubleEquals => ("==", ""),
            Operator::NotEquals => ("!=", ""),
            Operator::GreaterThan => (">", ""),
            Operator::LessThan => ("<", ""),
        };
        write!(f, "{open}{}{close}", self.values.join(","))
    }
}

/// A parsed label selector: all requirements must hold. The default (empty) selector
/// matches everything, like `labels.Everything()`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// `labels.Parse`.
    pub fn parse(selector: &str) -> Result<Self, ParseError> {
        let mut requirements = Parser::new(selector).parse().map_err(ParseError)?;
        // Upstream sorts by key (`sort.Sort(ByKey)`, not stable; only the order of
        // requirements with the same key can differ, which matching does not see).
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Selector { requirements })
    }

    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// `strconv.ParseInt(s, 10, 64)`: optional sign, ASCII digits, in range.
fn parse_int(s: &str) -> Option<i64> {
    // Rust's parser accepts exactly the same inputs for base 10 (no `_`, no spaces).
    s.parse::<i64>().ok()
}

/// The parser's own key check: no path, so the field prints as `<nil>`.
fn validate_label_key(key: &str, path: Path) -> Option<InvalidError> {
    let msgs = is_qualified_name(key);
    (!msgs.is_empty()).then(|| InvalidError::new(path, BadValue::Str(key.into()), msgs.join("; ")))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

/// `string2token`: the literal tokens.
fn literal_token(s: &[u8]) -> Option<Token> {
    Some(match s {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(ch: u8) -> bool {
    matches!(ch, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special_symbol(ch: u8) -> bool {
    matches!(ch, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// The byte-wise lexer. Like upstream's, `read` answers 0 at the end of the input, so a
/// NUL byte inside the selector also reads as "end" (and is skipped).
struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn read(&mut self) -> u8 {
        match self.s.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos -= 1;
    }

    fn text(bytes: &[u8]) -> String {
        // Tokens end only at ASCII bytes, so a slice of valid UTF-8 stays valid.
        String::from_utf8_lossy(bytes).into_owned()
    }

    /// `scanIDOrKeyword`: up to a special symbol or whitespace; `in` and `notin` are
    /// keywords, anything else an identifier.
    fn scan_id_or_keyword(&mut self) -> (Token, String) {
        let start = self.pos;
        let mut end;
        loop {
            end = self.pos;
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if is_special_symbol(ch) || is_whitespace(ch) {
                self.unread();
                break;
            }
        }
        let word = &self.s[start..end];
        match literal_token(word) {
            Some(t) => (t, Self::text(word)),
            None => (Token::Identifier, Self::text(word)),
        }
    }

    /// `scanSpecialSymbol`: the longest run of special symbols that is an operator
    /// (`!=` and `==` over `!` and `=`); `=!` is `=` then `!`.
    fn scan_special_symbol(&mut self) -> (Token, String) {
        let start = self.pos;
        let mut last: Option<(Token, usize)> = None;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if !is_special_symbol(ch) {
                self.unread();
                break;
            }
            match literal_token(&self.s[start..self.pos]) {
                Some(t) => last = Some((t, self.pos)),
                None if last.is_some() => {
                    self.unread();
                    break;
                }
                None => {}
            }
        }
        // Every single special symbol is a token, so upstream's ErrorToken branch
        // ("error expected: keyword found '...'") cannot be reached.
        let (token, end) = last.expect("a special symbol is always a token");
        (token, Self::text(&self.s[start..end]))
    }

    fn skip_white_spaces(&mut self, mut ch: u8) -> u8 {
        while is_whitespace(ch) {
            ch = self.read();
        }
        ch
    }

    fn lex(&mut self) -> (Token, String) {
        let first = self.read();
        let ch = self.skip_white_spaces(first);
        if ch == 0 {
            return (Token::EndOfString, String::new());
        }
        self.unread();
        if is_special_symbol(ch) {
            self.scan_special_symbol()
        } else {
            self.scan_id_or_keyword()
        }
    }
}

/// `ParserContext`: in `Values`, the keywords `in` and `notin` are plain identifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

impl Parser {
    /// `Parser.scan`: all tokens up to and including the end of the string.
    fn new(selector: &str) -> Self {
        let mut lexer = Lexer {
            s: selector.as_bytes(),
            pos: 0,
        };
        let mut items = Vec::new();
        loop {
            let item = lexer.lex();
            let end = item.0 == Token::EndOfString;
            items.push(item);
            if end {
                break;
            }
        }
        Parser { items, position: 0 }
    }

    fn item(&self, at: usize, context: Context) -> (Token, String) {
        let (tok, lit) = self
            .items
            .get(at)
            .cloned()
            .unwrap_or((Token::EndOfString, String::new()));
        match (context, tok) {
            (Context::Values, Token::In | Token::NotIn) => (Token::Identifier, lit),
            _ => (tok, lit),
        }
    }

    fn lookahead(&self, context: Context) -> (Token, String) {
        self.item(self.position, context)
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        self.position += 1;
        self.item(self.position - 1, context)
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!("found '{l}', expected: ',' or 'end of string'"));
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, operator) = self.parse_key_and_infer_operator()?;
        if let Some(op @ (Operator::Exists | Operator::DoesNotExist)) = operator {
            return Requirement::new(&key, op, Vec::new());
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::new(&key, operator, values)
    }

    /// `[!] KEY`; without an operator after the key (end or `,`) the operator is `exists`.
    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut operator = None;
        let (mut tok, mut literal) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (tok, literal) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        if let Some(e) = validate_label_key(&literal, Path::Nil) {
            return Err(e.to_string());
        }
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Token::EndOfString | Token::Comma)
            && operator != Some(Operator::DoesNotExist)
        {
            operator = Some(Operator::Exists);
        }
        Ok((literal, operator))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                let expected: Vec<&str> = BINARY_OPERATORS.iter().map(|o| o.as_str()).collect();
                return Err(format!("found '{lit}', expected: {}", expected.join(", ")));
            }
        })
    }

    /// `( values )`; `()` is the set holding the empty string.
    fn parse_values(&mut self) -> Result<Vec<String>, String> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let set = self.parse_identifiers_list()?;
                let (tok, _) = self.consume(Context::Values);
                if tok != Token::ClosedPar {
                    // Upstream reports the token after '(' here (unreachable: the list
                    // only ends before a ')').
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(set)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    /// A comma-separated list of possibly empty identifiers, as a sorted set.
    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, String> {
        let mut set = std::collections::BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    set.insert(lit);
                    let (tok2, lit2) = self.lookahead(Context::Values);
                    match tok2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set.into_iter().collect()),
                        _ => return Err(format!("found '{lit2}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    // "(," "(a,," and ",)" all put the empty string in the set.
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (tok2, _) = self.lookahead(Context::Values);
                    if tok2 == Token::ClosedPar {
                        set.insert(String::new());
                        return Ok(set.into_iter().collect());
                    }
                    if tok2 == Token::Comma {
                        // ",," is an empty value. The second comma is left for the next
                        // round (v1.33 consumed it here, which made "x in (a,,)" an error).
                        set.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    /// The single value of `=`, `==`, `!=`, `>`, `<`; empty before `,` or the end.
    fn parse_exact_value(&mut self) -> Result<Vec<String>, String> {
        let (tok, _) = self.lookahead(Context::Values);
        if matches!(tok, Token::EndOfString | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Token::Identifier {
            Ok(vec![lit])
        } else {
            Err(format!("found '{lit}', expected: identifier"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn err(selector: &str) -> String {
        Selector::parse(selector)
            .expect_err(&format!("{selector:?} should not parse"))
            .0
    }

    const NAME_REGEX: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE_REGEX: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    #[test]
    fn valid_selectors_parse_to_sorted_requirements() {
        let cases = [
            ("", ""),
            ("   ", ""),
            ("x=a", "x=a"),
            ("x==a", "x==a"),
            ("x!=a", "x!=a"),
            ("x = a", "x=a"),
            ("\tx\n==\r a ", "x==a"),
            ("x=", "x="),
            ("x=,y=b", "x=,y=b"),
            ("x", "x"),
            ("!x", "!x"),
            ("! x", "!x"),
            ("x>1", "x>1"),
            ("x<0", "x<0"),
            ("x>007", "x>007"),
            ("x in (a)", "x in (a)"),
            ("x in (b,a,b)", "x in (a,b)"),
            ("x notin (a, b)", "x notin (a,b)"),
            ("x in ()", "x in ()"),
            ("x in (,a)", "x in (,a)"),
            ("x in (a,)", "x in (,a)"),
            ("x in (a,,b)", "x in (,a,b)"),
            ("x in (,,a)", "x in (,a)"),
            ("x in (a,,,)", "x in (,a)"),
            ("x in (,,,)", "x in ()"),
            // Accepted since Kubernetes 1.35 (an error in v1.33).
            ("x in (a,,)", "x in (,a)"),
            ("x notin (,,)", "x notin ()"),
            ("x in (in,notin)", "x in (in,notin)"),
            ("x=in", "x=in"),
            ("in", "in"),
            ("in=notin", "in=notin"),
            ("notin in (in)", "notin in (in)"),
            ("z=1,y,!x,w in (c)", "w in (c),!x,y,z=1"),
            (
                "accelerator.example.com/gpu-family in (a100,h100),!node.kubernetes.io/exclude",
                "accelerator.example.com/gpu-family in (a100,h100),!node.kubernetes.io/exclude",
            ),
            ("x=a,x!=b", "x=a,x!=b"),
        ];
        for (input, canonical) in cases {
            let s =
                Selector::parse(input).unwrap_or_else(|e| panic!("{input:?} should parse: {e}"));
            assert_eq!(s.to_string(), canonical, "{input:?}");
        }
        let s = Selector::parse("x in (b,a)").unwrap();
        let r = &s.requirements()[0];
        assert_eq!(
            (r.key(), r.operator(), r.values()),
            ("x", Operator::In, &["a".to_string(), "b".to_string()][..])
        );
        assert_eq!(
            Selector::parse("x").unwrap().requirements()[0].operator(),
            Operator::Exists
        );
        assert!(Selector::parse("").unwrap().is_empty());
    }

    #[test]
    fn syntax_errors_have_the_exact_apimachinery_messages() {
        let cases = [
            (
                "x in",
                "unable to parse requirement: found '' expected: '('",
            ),
            (
                "x in a",
                "unable to parse requirement: found 'a' expected: '('",
            ),
            (
                "x in (",
                "unable to parse requirement: found '', expected: ',', ')' or identifier",
            ),
            (
                "x in (a",
                "unable to parse requirement: found '', expected: ',' or ')'",
            ),
            (
                "x in (a b)",
                "unable to parse requirement: found 'b', expected: ',' or ')'",
            ),
            (
                "x in (a,=)",
                "unable to parse requirement: found '=', expected: ',', or identifier",
            ),
            (
                "x in ((a)",
                "unable to parse requirement: found '(', expected: ',', ')' or identifier",
            ),
            (
                "x a",
                "unable to parse requirement: found 'a', expected: in, notin, =, ==, !=, gt, lt",
            ),
            (
                "x!a",
                "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt",
            ),
            (
                "x<=1",
                "unable to parse requirement: found '=', expected: identifier",
            ),
            (
                "x=!a",
                "unable to parse requirement: found '!', expected: identifier",
            ),
            (
                "x===a",
                "unable to parse requirement: found '=', expected: identifier",
            ),
            (
                "x=(a)",
                "unable to parse requirement: found '(', expected: identifier",
            ),
            (
                "!",
                "unable to parse requirement: found '', expected: identifier",
            ),
            (
                "!!x",
                "unable to parse requirement: found '!', expected: identifier",
            ),
            (
                "!=x",
                "found '!=', expected: !, identifier, or 'end of string'",
            ),
            (
                ",",
                "found ',', expected: !, identifier, or 'end of string'",
            ),
            (
                "=a",
                "found '=', expected: !, identifier, or 'end of string'",
            ),
            (
                "(x)",
                "found '(', expected: !, identifier, or 'end of string'",
            ),
            ("x,", "found '', expected: identifier after ','"),
            ("x,,y", "found ',', expected: identifier after ','"),
            ("x, =a", "found '=', expected: identifier after ','"),
            ("x=a b", "found 'b', expected: ',' or 'end of string'"),
            ("x in (a) b", "found 'b', expected: ',' or 'end of string'"),
            ("x=a)", "found ')', expected: ',' or 'end of string'"),
            // `!x` is complete before the '=': it is not "x != a".
            ("!x=a", "found '=', expected: ',' or 'end of string'"),
            (
                "x y=z",
                "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt",
            ),
        ];
        for (input, message) in cases {
            assert_eq!(err(input), message, "{input:?}");
        }
    }

    #[test]
    fn bad_keys_and_values_have_the_exact_apimachinery_messages() {
        assert_eq!(
            err("x_=a"),
            format!("unable to parse requirement: <nil>: Invalid value: \"x_\": {NAME_REGEX}")
        );
        assert_eq!(
            err("!-x"),
            format!("unable to parse requirement: <nil>: Invalid value: \"-x\": {NAME_REGEX}")
        );
        assert_eq!(
            err("Example.com/x"),
            "unable to parse requirement: <nil>: Invalid value: \"Example.com/x\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
        assert_eq!(
            err("/x in (a)"),
            "unable to parse requirement: <nil>: Invalid value: \"/x\": prefix part must be non-empty"
        );
        assert_eq!(
            err("x/"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"x/\": name part must be non-empty; {NAME_REGEX}"
            )
        );
        assert_eq!(
            err(&format!("{}=a", "k".repeat(64))),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"{}\": name part must be no more than 63 bytes",
                "k".repeat(64)
            )
        );
        // Non-ASCII key, quoted like Go's %q.
        assert_eq!(
            err("clé=a"),
            format!("unable to parse requirement: <nil>: Invalid value: \"clé\": {NAME_REGEX}")
        );
        assert_eq!(
            err("x=a/b"),
            format!(
                "unable to parse requirement: values[0][x]: Invalid value: \"a/b\": {VALUE_REGEX}"
            )
        );
        assert_eq!(
            err("x in (ok,-bad)"),
            format!(
                "unable to parse requirement: values[0][x]: Invalid value: \"-bad\": {VALUE_REGEX}"
            )
        );
        assert_eq!(
            err("x notin (a/b,c/d)"),
            format!(
                "unable to parse requirement: [values[0][x]: Invalid value: \"a/b\": {VALUE_REGEX}, values[1][x]: Invalid value: \"c/d\": {VALUE_REGEX}]"
            )
        );
        assert_eq!(
            err(&format!("x={}", "v".repeat(64))),
            format!(
                "unable to parse requirement: values[0][x]: Invalid value: \"{}\": must be no more than 63 bytes",
                "v".repeat(64)
            )
        );
        assert_eq!(
            err("x>abc"),
            "unable to parse requirement: values[0]: Invalid value: \"abc\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        assert_eq!(
            err("x>"),
            "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        assert_eq!(
            err("x<1.5"),
            "unable to parse requirement: values[0]: Invalid value: \"1.5\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        assert_eq!(
            err("x>99999999999999999999"),
            "unable to parse requirement: values[0]: Invalid value: \"99999999999999999999\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        // A sign makes an integer but not a label value, so `>`/`<` take no negative bound.
        assert_eq!(
            err("x<-1"),
            format!(
                "unable to parse requirement: values[0][x]: Invalid value: \"-1\": {VALUE_REGEX}"
            )
        );
        assert_eq!(
            err("x>+7"),
            format!(
                "unable to parse requirement: values[0][x]: Invalid value: \"+7\": {VALUE_REGEX}"
            )
        );
        assert_eq!(
            err("x>-a"),
            format!(
                "unable to parse requirement: [values[0]: Invalid value: \"-a\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][x]: Invalid value: \"-a\": {VALUE_REGEX}]"
            )
        );
    }

    #[test]
    fn nul_bytes_read_as_the_end_like_upstream() {
        // Upstream's lexer reads 0 at the end of input, so a NUL ends the current token and
        // is then skipped.
        assert_eq!(err("a=b\0c"), "found 'c', expected: ',' or 'end of string'");
        assert_eq!(err("a,\0"), "found '', expected: identifier after ','");
        assert_eq!(Selector::parse("a=b\0").unwrap().to_string(), "a=b");
        assert_eq!(Selector::parse("\0a").unwrap().to_string(), "");
    }

    #[test]
    fn requirement_constructor_checks() {
        assert_eq!(
            Requirement::new("x", Operator::In, vec![]).unwrap_err(),
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
        );
        assert_eq!(
            Requirement::new("x", Operator::Equals, vec!["a".into(), "b".into()]).unwrap_err(),
            "values: Invalid value: [\"a\",\"b\"]: exact-match compatibility requires one single value"
        );
        assert_eq!(
            Requirement::new("x", Operator::Exists, vec!["a".into()]).unwrap_err(),
            "values: Invalid value: [\"a\"]: values set must be empty for exists and does not exist"
        );
        assert_eq!(
            Requirement::new("bad key", Operator::Exists, vec![]).unwrap_err(),
            format!("key: Invalid value: \"bad key\": {NAME_REGEX}")
        );
    }

    #[test]
    fn matching_follows_requirement_matches() {
        let l = labels(&[
            ("pool", "online"),
            ("gpus", "8"),
            ("zone", "a"),
            ("empty", ""),
        ]);
        let yes = [
            "",
            "pool",
            "pool=online",
            "pool==online",
            "pool in (batch,online)",
            "pool!=batch",
            "pool notin (batch)",
            "missing!=x",
            "missing notin (x)",
            "!missing",
            "gpus>7",
            "gpus<9",
            "gpus>0",
            "empty=",
            "empty in ()",
            "empty",
            "pool,zone=a,gpus>1",
        ];
        for s in yes {
            assert!(Selector::parse(s).unwrap().matches(&l), "{s} should match");
        }
        let no = [
            "missing",
            "!pool",
            "pool=batch",
            "pool!=online",
            "pool in (batch)",
            "pool notin (online)",
            "missing=x",
            "missing in (x)",
            "gpus>8",
            "gpus<8",
            "pool>1",
            "missing<1",
            "missing=",
            "pool,zone=b",
        ];
        for s in no {
            assert!(
                !Selector::parse(s).unwrap().matches(&l),
                "{s} should not match"
            );
        }
        let ints = labels(&[("n", "+5"), ("m", "007"), ("big", "9223372036854775807")]);
        assert!(
            Selector::parse("n>4,m<8,m>6,big>9223372036854775806")
                .unwrap()
                .matches(&ints)
        );
    }
}
