//! Label selectors with the full grammar of `k8s.io/apimachinery/pkg/labels`:
//! `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k>1`, `k<1`,
//! comma-separated (AND).
//!
//! The lexer and parser follow the upstream state machine of Kubernetes v1.37 closely, so
//! that the same inputs are accepted (`k in (a,,)` included, as since 1.35) and the error
//! texts read the same as the API server's: field errors quote values with Go's `%q`, list
//! values as Go's JSON, and an invalid key has no field path (`<nil>: Invalid value: ...`),
//! as `labels.Parse` reports them. The test API server has its own, independent port
//! (`tests/src/apimachinery/selector.rs`) and a real kube-apiserver is the referee.

use std::collections::BTreeMap;
use std::fmt;

use super::SyntaxError;
use crate::validation::{invalid_field_message, label_value_errors, qualified_name_errors};

/// Go's `json.Marshal` of a string list, as a field error prints a list value: compact,
/// with Go's HTML-safe escapes of `<`, `>`, `&` and U+2028/U+2029.
fn go_json_list(values: &[String]) -> String {
    serde_json::to_string(values)
        .expect("strings serialise")
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// A selector operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SelectorOperator {
    Equals,
    DoubleEquals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

/// One requirement of a selector; all of a selector's requirements must hold.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    pub key: String,
    pub operator: SelectorOperator,
    /// Sorted and without duplicates, as upstream stores them.
    pub values: Vec<String>,
}

impl Requirement {
    /// Whether a label set satisfies this requirement. `!=` and `notin` hold for a label set
    /// without the key; `>`/`<` compare integers and fail when either side is not one.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            SelectorOperator::Equals | SelectorOperator::DoubleEquals | SelectorOperator::In => {
                value.is_some_and(|v| self.values.contains(v))
            }
            SelectorOperator::NotEquals | SelectorOperator::NotIn => {
                value.is_none_or(|v| !self.values.contains(v))
            }
            SelectorOperator::Exists => value.is_some(),
            SelectorOperator::DoesNotExist => value.is_none(),
            SelectorOperator::GreaterThan | SelectorOperator::LessThan => {
                let (Some(actual), Some(bound)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values.first().and_then(|v| v.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.operator == SelectorOperator::GreaterThan {
                    actual > bound
                } else {
                    actual < bound
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values = self.values.join(",");
        match self.operator {
            SelectorOperator::Equals => write!(f, "{}={}", self.key, values),
            SelectorOperator::DoubleEquals => write!(f, "{}=={}", self.key, values),
            SelectorOperator::NotEquals => write!(f, "{}!={}", self.key, values),
            SelectorOperator::In => write!(f, "{} in ({})", self.key, values),
            SelectorOperator::NotIn => write!(f, "{} notin ({})", self.key, values),
            SelectorOperator::Exists => write!(f, "{}", self.key),
            SelectorOperator::DoesNotExist => write!(f, "!{}", self.key),
            SelectorOperator::GreaterThan => write!(f, "{}>{}", self.key, values),
            SelectorOperator::LessThan => write!(f, "{}<{}", self.key, values),
        }
    }
}

/// A parsed label selector. The empty selector matches everything.
/// The longest label selector accepted.
pub const MAX_SELECTOR_BYTES: usize = 32 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Default, Hash)]
pub struct LabelSelector {
    /// Sorted by key, as upstream does.
    pub requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses a selector string; errors carry the API server's message.
    pub fn parse(selector: &str) -> Result<Self, SyntaxError> {
        // It travels in the request URL: far longer than any real selector, far shorter
        // than the URI limit (64 KiB) that would turn bad input into a transport error.
        if selector.len() > MAX_SELECTOR_BYTES {
            return Err(SyntaxError::InvalidSelector {
                selector: format!("{}...", selector.chars().take(40).collect::<String>()),
                message: format!(
                    "the selector is {} bytes; at most {MAX_SELECTOR_BYTES} are accepted",
                    selector.len()
                ),
            });
        }
        Parser::new(selector)
            .parse()
            .map(|mut requirements| {
                requirements.sort_by(|a, b| a.key.cmp(&b.key));
                LabelSelector { requirements }
            })
            .map_err(|message| SyntaxError::InvalidSelector {
                selector: selector.to_string(),
                message,
            })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

impl fmt::Display for LabelSelector {
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Error,
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

fn symbol_token(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

/// Upstream's `Lexer`, reading one character at a time: reading past the end gives NUL, and
/// a NUL read ends the token it is read in (it is consumed, so lexing goes on after it) or,
/// at the start of a token, the input.
struct Lexer {
    chars: Vec<char>,
    pos: usize,
}

impl Lexer {
    fn read(&mut self) -> char {
        match self.chars.get(self.pos) {
            Some(&c) => {
                self.pos += 1;
                c
            }
            None => '\0',
        }
    }

    fn unread(&mut self) {
        self.pos -= 1;
    }

    fn lex(&mut self) -> (Token, String) {
        let mut ch = self.read();
        while is_whitespace(ch) {
            ch = self.read();
        }
        if ch == '\0' {
            return (Token::EndOfString, String::new());
        }
        self.unread();
        if is_special(ch) {
            self.scan_special_symbol()
        } else {
            self.scan_id_or_keyword()
        }
    }

    fn scan_id_or_keyword(&mut self) -> (Token, String) {
        let mut word = String::new();
        loop {
            let ch = self.read();
            if ch == '\0' {
                break;
            }
            if is_special(ch) || is_whitespace(ch) {
                self.unread();
                break;
            }
            word.push(ch);
        }
        let token = match word.as_str() {
            "in" => Token::In,
            "notin" => Token::NotIn,
            _ => Token::Identifier,
        };
        (token, word)
    }

    /// The longest run of special characters that is a token (`!=` rather than `!`).
    fn scan_special_symbol(&mut self) -> (Token, String) {
        let mut buffer = String::new();
        let mut last: Option<(Token, String)> = None;
        loop {
            let ch = self.read();
            if ch == '\0' {
                break;
            }
            if !is_special(ch) {
                self.unread();
                break;
            }
            buffer.push(ch);
            if let Some(t) = symbol_token(&buffer) {
                last = Some((t, buffer.clone()));
            } else if last.is_some() {
                self.unread();
                break;
            }
        }
        last.unwrap_or_else(|| {
            (
                Token::Error,
                format!("error expected: keyword found '{buffer}'"),
            )
        })
    }
}

/// Splits the input into (token, literal) pairs up to the end of the string, as the
/// upstream parser's `scan` does.
fn lex(input: &str) -> Vec<(Token, String)> {
    let mut lexer = Lexer {
        chars: input.chars().collect(),
        pos: 0,
    };
    let mut out = Vec::new();
    loop {
        let item = lexer.lex();
        let end = item.0 == Token::EndOfString;
        out.push(item);
        if end {
            return out;
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

impl Parser {
    fn new(input: &str) -> Self {
        Parser {
            items: lex(input),
            position: 0,
        }
    }

    fn item(&self, context: Context) -> (Token, String) {
        let (tok, lit) = self.items[self.position.min(self.items.len() - 1)].clone();
        // In a values context the keywords `in`/`notin` are plain identifiers.
        if context == Context::Values && matches!(tok, Token::In | Token::NotIn) {
            return (Token::Identifier, lit);
        }
        (tok, lit)
    }

    fn lookahead(&self, context: Context) -> (Token, String) {
        self.item(context)
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        let item = self.item(context);
        self.position += 1;
        item
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
                        _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
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
        if let Some(op @ (SelectorOperator::Exists | SelectorOperator::DoesNotExist)) = operator {
            return new_requirement(key, op, Vec::new());
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            SelectorOperator::In | SelectorOperator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        new_requirement(key, operator, values)
    }

    fn parse_key_and_infer_operator(
        &mut self,
    ) -> Result<(String, Option<SelectorOperator>), String> {
        let mut operator = None;
        let (mut tok, mut lit) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            operator = Some(SelectorOperator::DoesNotExist);
            (tok, lit) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        let errs = qualified_name_errors(&lit);
        if !errs.is_empty() {
            // The parser's own key check has no field path: Go prints the nil path `<nil>`.
            return Err(invalid_field_message("<nil>", &lit, &errs.join("; ")));
        }
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Token::EndOfString | Token::Comma) && operator.is_none() {
            operator = Some(SelectorOperator::Exists);
        }
        Ok((lit, operator))
    }

    fn parse_operator(&mut self) -> Result<SelectorOperator, String> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => SelectorOperator::In,
            Token::Equals => SelectorOperator::Equals,
            Token::DoubleEquals => SelectorOperator::DoubleEquals,
            Token::GreaterThan => SelectorOperator::GreaterThan,
            Token::LessThan => SelectorOperator::LessThan,
            Token::NotIn => SelectorOperator::NotIn,
            Token::NotEquals => SelectorOperator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    fn parse_values(&mut self) -> Result<Vec<String>, String> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                let (tok, _) = self.consume(Context::Values);
                if tok != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, String> {
        let mut values: Vec<String> = Vec::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    values.push(lit);
                    let (tok2, lit2) = self.lookahead(Context::Values);
                    match tok2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(format!("found '{lit2}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    // `(,a)`, `(a,)` and `(a,,b)` stand for an empty value, as upstream.
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    let (tok2, _) = self.lookahead(Context::Values);
                    if tok2 == Token::ClosedPar {
                        values.push(String::new());
                        return Ok(values);
                    }
                    if tok2 == Token::Comma {
                        // ",," is an empty value; the second comma is read next round (so
                        // `(a,,)` parses, as since Kubernetes 1.35).
                        values.push(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

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

/// Upstream's `NewRequirement`: validates the values for the operator and each value as a
/// label value; several problems are reported as `[a, b]` like a field error aggregate.
fn new_requirement(
    key: String,
    operator: SelectorOperator,
    mut values: Vec<String>,
) -> Result<Requirement, String> {
    values.sort();
    values.dedup();
    let mut errs: Vec<String> = Vec::new();
    let shown = go_json_list(&values);
    match operator {
        SelectorOperator::In | SelectorOperator::NotIn if values.is_empty() => errs.push(format!(
            "values: Invalid value: {shown}: for 'in', 'notin' operators, values set can't be empty"
        )),
        SelectorOperator::Equals | SelectorOperator::DoubleEquals | SelectorOperator::NotEquals
            if values.len() != 1 =>
        {
            errs.push(format!(
                "values: Invalid value: {shown}: exact-match compatibility requires one single value"
            ))
        }
        SelectorOperator::GreaterThan | SelectorOperator::LessThan => {
            if values.len() != 1 {
                errs.push(format!(
                    "values: Invalid value: {shown}: for 'Gt', 'Lt' operators, exactly one value is required"
                ));
            }
            for (i, v) in values.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    errs.push(invalid_field_message(
                        &format!("values[{i}]"),
                        v,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    ));
                }
            }
        }
        _ => {}
    }
    for (i, v) in values.iter().enumerate() {
        let msgs = label_value_errors(v);
        if !msgs.is_empty() {
            errs.push(invalid_field_message(
                &format!("values[{i}][{key}]"),
                v,
                &msgs.join("; "),
            ));
        }
    }
    // `ErrorList.ToAggregate`: a message given twice is reported once.
    let mut unique: Vec<String> = Vec::new();
    for e in errs {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    match unique.len() {
        0 => Ok(Requirement {
            key,
            operator,
            values,
        }),
        1 => Err(unique.remove(0)),
        _ => Err(format!("[{}]", unique.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn matches(selector: &str, pairs: &[(&str, &str)]) -> bool {
        LabelSelector::parse(selector)
            .unwrap()
            .matches(&labels(pairs))
    }

    #[test]
    fn equality_forms() {
        assert!(matches("pool=online", &[("pool", "online")]));
        assert!(matches("pool==online", &[("pool", "online")]));
        assert!(!matches("pool=online", &[("pool", "batch")]));
        assert!(!matches("pool=online", &[]));
    }

    #[test]
    fn not_equals_and_notin_match_nodes_without_the_key() {
        assert!(matches("pool!=online", &[]));
        assert!(matches("pool notin (online,batch)", &[]));
        assert!(!matches("pool notin (online,batch)", &[("pool", "batch")]));
        assert!(matches("pool notin (online)", &[("pool", "batch")]));
    }

    #[test]
    fn set_forms_and_existence() {
        assert!(matches("gpu in (a100, h100)", &[("gpu", "h100")]));
        assert!(!matches("gpu in (a100,h100)", &[("gpu", "v100")]));
        assert!(matches("gpu", &[("gpu", "")]));
        assert!(!matches("!gpu", &[("gpu", "x")]));
        assert!(matches("!gpu", &[]));
        assert!(matches("a=1,b,!c", &[("a", "1"), ("b", "x")]));
    }

    #[test]
    fn gt_lt_compare_integers() {
        assert!(matches("mem>40", &[("mem", "80")]));
        assert!(
            !matches("mem>40", &[("mem", "8")]),
            "integer, not string, comparison"
        );
        assert!(!matches("mem>40", &[("mem", "80gb")]));
        assert!(matches("mem<100", &[("mem", "80")]));
    }

    #[test]
    fn empty_values_between_commas_as_kubernetes_1_35_and_later() {
        assert_eq!(
            LabelSelector::parse("k in (a,,)").unwrap().requirements[0].values,
            vec!["".to_string(), "a".to_string()]
        );
        assert_eq!(
            LabelSelector::parse("k notin (,,)").unwrap().requirements[0].values,
            vec!["".to_string()]
        );
        assert!(matches("k in (a,,)", &[("k", "")]));
        assert!(!matches("k in (a,,)", &[("k", "b")]));
    }

    #[test]
    fn keywords_are_values_inside_parentheses() {
        assert!(matches("k in (in,notin)", &[("k", "in")]));
    }

    #[test]
    fn empty_selector_matches_everything() {
        let s = LabelSelector::parse("").unwrap();
        assert!(s.is_empty());
        assert!(s.matches(&labels(&[])));
    }

    #[test]
    fn canonical_display() {
        let s = LabelSelector::parse("b in (y,x), a, !c").unwrap();
        assert_eq!(s.to_string(), "a,b in (x,y),!c");
    }

    fn error(selector: &str) -> String {
        match LabelSelector::parse(selector).unwrap_err() {
            SyntaxError::InvalidSelector { message, .. } => message,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn error_texts_follow_upstream() {
        assert_eq!(
            error("k in"),
            "unable to parse requirement: found '' expected: '('"
        );
        assert_eq!(
            error("k in (a"),
            "unable to parse requirement: found '', expected: ',' or ')'"
        );
        assert_eq!(
            error("a=b c"),
            "found 'c', expected: ',' or 'end of string'"
        );
        assert_eq!(error("a,"), "found '', expected: identifier after ','");
        assert_eq!(
            error("=a"),
            "found '=', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            error("a>b"),
            "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        assert!(error("a/b/c=x").starts_with("unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist"));
        assert_eq!(
            error(&format!("{}=x", "k".repeat(64))),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"{}\": name part must be no more than 63 bytes",
                "k".repeat(64)
            )
        );
        assert_eq!(
            error("k in (a b)"),
            "unable to parse requirement: found 'b', expected: ',' or ')'"
        );
        assert_eq!(
            error("k=a\tb$"),
            "found 'b$', expected: ',' or 'end of string'"
        );
        let two = error("k in (x&y,$z)");
        assert!(
            two.starts_with(
                "unable to parse requirement: [values[0][k]: Invalid value: \"$z\": a valid label"
            ) && two.contains(", values[1][k]: Invalid value: \"x&y\": a valid label"),
            "{two}"
        );
        assert!(
            error("a=b$").starts_with("found '$'")
                || error("a=b$").contains("values[0][a]: Invalid value: \"b$\""),
            "{}",
            error("a=b$")
        );
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = LabelSelector::parse(&s);
        }

        #[test]
        fn never_panics_on_selector_alphabet(s in "[a-c =!(),<>0-9in ot]{0,30}") {
            let _ = LabelSelector::parse(&s);
        }

        #[test]
        fn display_reparses_to_the_same_selector(s in "[a-c]{1,3}(=[a-c]{1,2}|!=[a-c]|| in \\([a-c],[a-c]\\))(,![d-f])?") {
            if let Ok(parsed) = LabelSelector::parse(&s) {
                prop_assert_eq!(LabelSelector::parse(&parsed.to_string()).unwrap(), parsed);
            }
        }
    }
}
