//! DRA's device selectors evaluated as the scheduler evaluates them: CEL over one `device`,
//! in the environment Kubernetes' `resource.k8s.io` CEL library declares.
//!
//! The expression language comes from the `cel` crate (cel-rust): a parser, checker-free
//! interpreter, standard library and the strings and lists extensions. What DRA adds on top is
//! here:
//!
//! - the `device` variable: `driver`, `allowMultipleAllocations`, `attributes[domain].id` and
//!   `capacity[domain].id`. An attribute published without a domain (`productName`) lives
//!   under the driver's (`device.attributes["gpu.nvidia.com"].productName`), and a domain
//!   the device does not have is an empty map rather than an error, as the API server's map
//!   wrapper answers (so `has(device.attributes["other.com"].x)` is false);
//! - attribute values of the four types (string, int, bool, version) and their list forms;
//! - Kubernetes' `quantity` library (`quantity()`, `isQuantity()`, `sign()`, `compareTo`,
//!   `isGreaterThan`, `isLessThan`, `add`, `sub`, `asInteger`, `isInteger`,
//!   `asApproximateFloat`) and `semver` library (`semver()`, `isSemver()`, `major`,
//!   `minor`, `patch`, `compareTo`, `isGreaterThan`, `isLessThan`);
//! - the bindings extension's `cel.bind(name, init, expr)`, which DRA enables so a domain is
//!   written once.
//!
//! Three outcomes are kept apart, because they mean different things to a verdict:
//! a match or a mismatch; a CEL runtime error (a missing attribute read without `has`, a
//! comparison of an int with a string): the scheduler stops allocating on that node with the
//! error, so placekit does too; and an expression placekit cannot evaluate (a function of a
//! Kubernetes library not implemented here, such as `ip()` or `sets.contains()`), which
//! makes the verdict say so instead of guessing. There is no type checker: an expression the
//! API server's checker refuses is never stored, so never reaches placekit. The runtime cost limit
//! (`CELSelectorExpressionMaxCost`) is not metered: selectors over a device's at most 32
//! attributes stay far below it, and the API server refuses at admission what would not.

use std::any::Any;
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use cel::common::ast::{ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue};
use cel::common::types::{
    self, CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelString, Type,
};
use cel::common::value::{CowVal, StaticVal, Val};
use cel::parser::{Macro, MacroExprHelper, ParseError};
use cel::{Context, Env, ExecutionError, Program, Value};

use crate::model::quantity::parse_quantity_scaled;

/// The longest selector the API server accepts (`CELSelectorExpressionMaxLength`).
pub const MAX_EXPRESSION_LENGTH: usize = 10 * 1024;

/// One published attribute value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttributeValue {
    Int(i64),
    Bool(bool),
    String(String),
    /// A semantic version, as published (the driver's text).
    Version(String),
    Ints(Vec<i64>),
    Bools(Vec<bool>),
    Strings(Vec<String>),
    Versions(Vec<String>),
}

impl AttributeValue {
    /// The value of an attribute as a slice publishes it (`{"string": "gpu"}`); `None` for a
    /// shape placekit does not know.
    pub fn from_json(value: &serde_json::Value) -> Option<Self> {
        let object = value.as_object()?;
        let strings = |v: &serde_json::Value| -> Option<Vec<String>> {
            v.as_array()?
                .iter()
                .map(|s| s.as_str().map(str::to_string))
                .collect()
        };
        if let Some(v) = object.get("string") {
            return v.as_str().map(|s| AttributeValue::String(s.to_string()));
        }
        if let Some(v) = object.get("int") {
            return v.as_i64().map(AttributeValue::Int);
        }
        if let Some(v) = object.get("bool") {
            return v.as_bool().map(AttributeValue::Bool);
        }
        if let Some(v) = object.get("version") {
            return v.as_str().map(|s| AttributeValue::Version(s.to_string()));
        }
        if let Some(v) = object.get("strings") {
            return strings(v).map(AttributeValue::Strings);
        }
        if let Some(v) = object.get("versions") {
            return strings(v).map(AttributeValue::Versions);
        }
        if let Some(v) = object.get("ints") {
            return v
                .as_array()?
                .iter()
                .map(serde_json::Value::as_i64)
                .collect::<Option<Vec<_>>>()
                .map(AttributeValue::Ints);
        }
        if let Some(v) = object.get("bools") {
            return v
                .as_array()?
                .iter()
                .map(serde_json::Value::as_bool)
                .collect::<Option<Vec<_>>>()
                .map(AttributeValue::Bools);
        }
        None
    }

    /// The value as `matchAttribute` compares it: equal type and equal value.
    pub fn same_as(&self, other: &AttributeValue) -> bool {
        self == other
    }
}

/// What a selector sees of one device.
#[derive(Debug, Clone, Copy)]
pub struct DeviceFacts<'a> {
    pub driver: &'a str,
    /// Attributes by their published (qualified or unqualified) name.
    pub attributes: &'a BTreeMap<String, AttributeValue>,
    /// Capacities by their published name, as quantities.
    pub capacity: &'a BTreeMap<String, String>,
    pub allow_multiple_allocations: bool,
}

/// Why a selector gave no yes or no.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The scheduler would fail too: it reports this and allocates nothing on the node.
    #[error("CEL runtime error: {0}")]
    Runtime(String),
    /// placekit cannot evaluate this expression; the scheduler may.
    #[error("placekit cannot evaluate this selector: {0}")]
    Unsupported(String),
}

/// A compiled device selector.
#[derive(Debug)]
pub struct Selector {
    program: Program,
    /// The string literals of the expression: the domains it may look up, which get an
    /// empty map when the device has none (the API server's default for a missing domain).
    literals: Vec<String>,
}

impl Selector {
    /// Compiles `expression`; an error says placekit cannot evaluate it (the API server
    /// accepted it, or it would not be stored).
    pub fn compile(expression: &str) -> Result<Selector, SelectorError> {
        if expression.len() > MAX_EXPRESSION_LENGTH {
            return Err(SelectorError::Unsupported(format!(
                "longer than the {MAX_EXPRESSION_LENGTH} bytes the API server accepts"
            )));
        }
        let program = environment()
            .compile(expression)
            .map_err(|e| SelectorError::Unsupported(format!("does not parse: {e}")))?;
        let mut literals = Vec::new();
        collect_string_literals(program.expression(), &mut literals);
        literals.sort();
        literals.dedup();
        Ok(Selector { program, literals })
    }

    /// Whether `device` matches.
    pub fn matches(&self, device: DeviceFacts<'_>) -> Result<bool, SelectorError> {
        let mut context = Context::with_env(environment_arc().clone());
        context.add_variable_as_val("device", device_value(device, &self.literals));
        match self.program.execute(&context) {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(other) => Err(SelectorError::Runtime(format!(
                "the expression evaluated to {other:?}, not a bool"
            ))),
            Err(ExecutionError::UndeclaredReference(name)) => Err(SelectorError::Unsupported(
                format!("{name} is not implemented by placekit"),
            )),
            Err(e) => Err(SelectorError::Runtime(e.to_string())),
        }
    }
}

/// A cache of compiled selectors, by expression: classes and claims repeat a handful of
/// expressions over thousands of devices.
#[derive(Debug, Default)]
pub struct SelectorCache {
    compiled: std::sync::Mutex<HashMap<String, Arc<Result<Selector, SelectorError>>>>,
}

impl SelectorCache {
    pub fn get(&self, expression: &str) -> Arc<Result<Selector, SelectorError>> {
        let mut compiled = self
            .compiled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        compiled
            .entry(expression.to_string())
            .or_insert_with(|| Arc::new(Selector::compile(expression)))
            .clone()
    }
}

fn collect_string_literals(expr: &IdedExpr, out: &mut Vec<String>) {
    match &expr.expr {
        Expr::Literal(LiteralValue::String(s)) => out.push(s.to_string()),
        Expr::Call(call) => {
            if let Some(t) = &call.target {
                collect_string_literals(t, out);
            }
            for a in &call.args {
                collect_string_literals(a, out);
            }
        }
        Expr::Select(select) => collect_string_literals(&select.operand, out),
        Expr::List(list) => {
            for e in &list.elements {
                collect_string_literals(e, out);
            }
        }
        Expr::Map(map) => {
            for entry in &map.entries {
                if let cel::common::ast::EntryExpr::MapEntry(e) = &entry.expr {
                    collect_string_literals(&e.key, out);
                    collect_string_literals(&e.value, out);
                }
            }
        }
        Expr::Comprehension(c) => {
            for e in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                collect_string_literals(e, out);
            }
        }
        _ => {}
    }
}

/// The `device` variable for one device.
fn device_value<'v>(device: DeviceFacts<'v>, literals: &[String]) -> Box<dyn Val + 'v> {
    let mut attributes: HashMap<CelMapKey<'v>, HashMap<CelMapKey<'v>, Box<dyn Val + 'v>>> =
        HashMap::new();
    for (name, value) in device.attributes {
        let (domain, id) = split_qualified(name, device.driver);
        attributes
            .entry(CelMapKey::from(domain))
            .or_default()
            .insert(CelMapKey::from(id), attribute_val(value));
    }
    let mut capacity: HashMap<CelMapKey<'v>, HashMap<CelMapKey<'v>, Box<dyn Val + 'v>>> =
        HashMap::new();
    for (name, value) in device.capacity {
        let (domain, id) = split_qualified(name, device.driver);
        let val: Box<dyn Val + 'v> = match parse_quantity_scaled(value, NANO) {
            Some(nano) => Box::new(Quantity { nano }),
            // A capacity the API server would not have stored: reading it is an error.
            None => continue,
        };
        capacity
            .entry(CelMapKey::from(domain))
            .or_default()
            .insert(CelMapKey::from(id), val);
    }
    // A domain the device lacks reads as an empty map, as the API server answers.
    for literal in literals {
        attributes
            .entry(CelMapKey::from(literal.clone()))
            .or_default();
        capacity
            .entry(CelMapKey::from(literal.clone()))
            .or_default();
    }
    let nest = |m: HashMap<CelMapKey<'v>, HashMap<CelMapKey<'v>, Box<dyn Val + 'v>>>| {
        let outer: HashMap<CelMapKey<'v>, Box<dyn Val + 'v>> = m
            .into_iter()
            .map(|(k, inner)| (k, Box::new(CelMap::from(inner)) as Box<dyn Val + 'v>))
            .collect();
        Box::new(CelMap::from(outer)) as Box<dyn Val + 'v>
    };
    let mut fields: HashMap<CelMapKey<'v>, Box<dyn Val + 'v>> = HashMap::new();
    fields.insert(
        CelMapKey::from("driver"),
        Box::new(CelString::from(device.driver)),
    );
    fields.insert(
        CelMapKey::from("allowMultipleAllocations"),
        Box::new(CelBool::from(device.allow_multiple_allocations)),
    );
    fields.insert(CelMapKey::from("attributes"), nest(attributes));
    fields.insert(CelMapKey::from("capacity"), nest(capacity));
    Box::new(CelMap::from(fields))
}

/// `gpu.nvidia.com/productName` -> (`gpu.nvidia.com`, `productName`); an unqualified name
/// is in the driver's domain.
pub fn split_qualified<'a>(name: &'a str, driver: &'a str) -> (&'a str, &'a str) {
    match name.split_once('/') {
        Some((domain, id)) => (domain, id),
        None => (driver, name),
    }
}

fn attribute_val<'v>(value: &'v AttributeValue) -> Box<dyn Val + 'v> {
    let list = |items: Vec<Box<dyn Val + 'v>>| Box::new(CelList::from(items)) as Box<dyn Val + 'v>;
    match value {
        AttributeValue::Int(i) => Box::new(CelInt::from(*i)),
        AttributeValue::Bool(b) => Box::new(CelBool::from(*b)),
        AttributeValue::String(s) => Box::new(CelString::from(s.as_str())),
        AttributeValue::Version(v) => match Semver::parse(v, false) {
            Some(s) => Box::new(s),
            None => Box::new(CelString::from(v.as_str())),
        },
        AttributeValue::Ints(v) => list(
            v.iter()
                .map(|i| Box::new(CelInt::from(*i)) as Box<dyn Val + 'v>)
                .collect(),
        ),
        AttributeValue::Bools(v) => list(
            v.iter()
                .map(|b| Box::new(CelBool::from(*b)) as Box<dyn Val + 'v>)
                .collect(),
        ),
        AttributeValue::Strings(v) => list(
            v.iter()
                .map(|s| Box::new(CelString::from(s.as_str())) as Box<dyn Val + 'v>)
                .collect(),
        ),
        AttributeValue::Versions(v) => list(
            v.iter()
                .map(|s| match Semver::parse(s, false) {
                    Some(s) => Box::new(s) as Box<dyn Val + 'v>,
                    None => Box::new(CelString::from(s.as_str())) as Box<dyn Val + 'v>,
                })
                .collect(),
        ),
    }
}

/// Quantities in billionths, the API server's finest scale.
const NANO: i128 = 1_000_000_000;

static QUANTITY_TYPE: Type = Type::new_unspecified_type("kubernetes.Quantity");
static SEMVER_TYPE: Type = Type::new_unspecified_type("kubernetes.Semver");

/// A Kubernetes quantity as CEL sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Quantity {
    nano: i128,
}

impl Val for Quantity {
    fn get_type(&self) -> &Type {
        &QUANTITY_TYPE
    }
    fn cel_type() -> &'static Type {
        &QUANTITY_TYPE
    }
    fn equals(&self, other: &dyn Val) -> bool {
        other.downcast_ref::<Quantity>().is_some_and(|o| o == self)
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(*self)
    }
    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}
impl StaticVal for Quantity {}

/// A semantic version (2.0.0) as CEL sees it; build metadata is kept but not compared.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<String>,
}

impl Semver {
    /// Parses `text` strictly (`1.2.3`, `1.2.3-rc.1+build`), or with `normalize` as
    /// Kubernetes' `semver(text, true)` does: a leading `v`, missing minor and patch, and
    /// leading zeros are accepted.
    fn parse(text: &str, normalize: bool) -> Option<Semver> {
        let mut text = text;
        if normalize {
            text = text.strip_prefix('v').unwrap_or(text);
        }
        let (core, build) = match text.split_once('+') {
            Some((c, b)) => (c, Some(b)),
            None => (text, None),
        };
        if let Some(b) = build
            && (b.is_empty()
                || b.split('.').any(|i| {
                    i.is_empty() || !i.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                }))
        {
            return None;
        }
        let (version, pre) = match core.split_once('-') {
            Some((v, p)) => (v, Some(p)),
            None => (core, None),
        };
        let mut numbers: Vec<&str> = version.split('.').collect();
        if normalize {
            while numbers.len() < 3 {
                numbers.push("0");
            }
        }
        let [major, minor, patch] = numbers.as_slice() else {
            return None;
        };
        let number = |s: &str| -> Option<u64> {
            if s.is_empty() || !s.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            if !normalize && s.len() > 1 && s.starts_with('0') {
                return None;
            }
            s.parse().ok()
        };
        let pre = match pre {
            None => Vec::new(),
            Some(p) => {
                let ids: Vec<String> = p.split('.').map(str::to_string).collect();
                for id in &ids {
                    let numeric = id.chars().all(|c| c.is_ascii_digit());
                    if id.is_empty()
                        || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                        || (numeric && id.len() > 1 && id.starts_with('0'))
                    {
                        return None;
                    }
                }
                ids
            }
        };
        Some(Semver {
            major: number(major)?,
            minor: number(minor)?,
            patch: number(patch)?,
            pre,
        })
    }

    /// Precedence as semver 2.0.0 orders it.
    fn precedence(&self, other: &Semver) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => {
                    for (a, b) in self.pre.iter().zip(&other.pre) {
                        let ord = match (a.parse::<u64>(), b.parse::<u64>()) {
                            (Ok(x), Ok(y)) => x.cmp(&y),
                            (Ok(_), Err(_)) => Ordering::Less,
                            (Err(_), Ok(_)) => Ordering::Greater,
                            (Err(_), Err(_)) => a.cmp(b),
                        };
                        if ord != Ordering::Equal {
                            return ord;
                        }
                    }
                    self.pre.len().cmp(&other.pre.len())
                }
            })
    }
}

impl Val for Semver {
    fn get_type(&self) -> &Type {
        &SEMVER_TYPE
    }
    fn cel_type() -> &'static Type {
        &SEMVER_TYPE
    }
    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<Semver>()
            .is_some_and(|o| o.precedence(self) == Ordering::Equal)
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}
impl StaticVal for Semver {}

fn environment() -> &'static Env {
    environment_arc().as_ref()
}

fn environment_arc() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(build_environment()))
}

/// The standard library, the strings and lists extensions, `cel.bind`, and Kubernetes'
/// quantity and semver libraries. Registration of a fixed set of overloads cannot fail
/// unless two collide, which the unit tests would show at once.
fn build_environment() -> Env {
    let mut env = Env::stdlib();
    let registered = cel::extensions::strings(&mut env)
        .and_then(|()| cel::extensions::lists(&mut env))
        .and_then(|()| env.add_macro(Macro::receiver("bind", 3, bind_macro)))
        .and_then(|()| register_quantity(&mut env))
        .and_then(|()| register_semver(&mut env));
    if let Err(e) = registered {
        unreachable!("the DRA CEL environment's overloads collide: {e:?}");
    }
    env
}

/// `cel.bind(name, init, expr)`: `expr` with `name` bound to `init`, evaluated once.
fn bind_macro(
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, ParseError> {
    let is_cel =
        matches!(target.as_ref().map(|t| &t.expr), Some(Expr::Ident(name)) if name == "cel");
    if !is_cel {
        return Ok(None);
    }
    let (Some(result), Some(init), Some(name)) = (args.pop(), args.pop(), args.pop()) else {
        return Ok(None);
    };
    let Expr::Ident(var) = name.expr else {
        return Err(helper.new_error(
            name.id,
            "cel.bind() variable names must be simple identifiers",
        ));
    };
    let bind = ComprehensionExpr {
        iter_range: helper.next_expr(Expr::List(ListExpr::new(Vec::new()))),
        iter_var: "#unused".to_owned(),
        iter_var2: None,
        accu_var: var.clone(),
        accu_init: init,
        loop_cond: helper.next_expr(Expr::Literal(LiteralValue::Boolean(false.into()))),
        loop_step: helper.next_expr(Expr::Ident(var)),
        result,
    };
    Ok(Some(helper.next_expr(Expr::Comprehension(Box::new(bind)))))
}

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type Answer<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

fn string_arg<'a>(
    args: &'a [CowVal<'_, '_>],
    i: usize,
    function: &str,
) -> Result<&'a str, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<CelString>())
        .map(|s| s.inner())
        .ok_or_else(|| ExecutionError::function_error(function, "expected a string argument"))
}

fn quantity_arg(
    args: &[CowVal<'_, '_>],
    i: usize,
    function: &str,
) -> Result<Quantity, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<Quantity>())
        .copied()
        .ok_or_else(|| ExecutionError::function_error(function, "expected a quantity"))
}

fn int_arg(args: &[CowVal<'_, '_>], i: usize, function: &str) -> Result<i64, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<CelInt>())
        .map(|i| *i.inner())
        .ok_or_else(|| ExecutionError::function_error(function, "expected an int"))
}

fn semver_arg(args: &[CowVal<'_, '_>], i: usize, function: &str) -> Result<Semver, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<Semver>())
        .cloned()
        .ok_or_else(|| ExecutionError::function_error(function, "expected a semver"))
}

fn bool_answer<'b, 'v>(b: bool) -> Answer<'b, 'v> {
    Ok(CowVal::owned(CelBool::from(b)))
}

fn int_answer<'b, 'v>(i: i64) -> Answer<'b, 'v> {
    Ok(CowVal::owned(CelInt::from(i)))
}

fn ordering_int(o: Ordering) -> i64 {
    match o {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    }
}

/// Declares Kubernetes' quantity library in `env`: `quantity()`, `isQuantity()` and each
/// method of a quantity (`isGreaterThan`, `compareTo`, `add`, `sub`, `asInteger`...).
///
/// Long on purpose: one declaration per function of the library, each a few lines, kept
/// together so the list reads against Kubernetes' `library/quantity.go`.
fn register_quantity(env: &mut Env) -> Result<(), cel::DeclarationError> {
    let q = || QUANTITY_TYPE.to_owned();
    env.add_overload(
        "quantity",
        "string_to_quantity",
        vec![types::STRING_TYPE],
        |args: Args<'_, '_>| {
            let text = string_arg(&args, 0, "quantity")?;
            parse_quantity_scaled(text, NANO)
                .map(|nano| CowVal::owned(Quantity { nano }))
                .ok_or_else(|| {
                    ExecutionError::function_error("quantity", format!("invalid quantity {text:?}"))
                })
        },
    )?;
    env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![types::STRING_TYPE],
        |args: Args<'_, '_>| {
            bool_answer(parse_quantity_scaled(string_arg(&args, 0, "isQuantity")?, NANO).is_some())
        },
    )?;
    // `sign(q)` is a global function in Kubernetes' library, not a member.
    env.add_overload("sign", "quantity_sign", vec![q()], |args: Args<'_, '_>| {
        int_answer(ordering_int(quantity_arg(&args, 0, "sign")?.nano.cmp(&0)))
    })?;
    env.add_member_overload(
        "isGreaterThan",
        "quantity_is_greater_than",
        q(),
        vec![q()],
        |args: Args<'_, '_>| {
            bool_answer(
                quantity_arg(&args, 0, "isGreaterThan")?.nano
                    > quantity_arg(&args, 1, "isGreaterThan")?.nano,
            )
        },
    )?;
    env.add_member_overload(
        "isLessThan",
        "quantity_is_less_than",
        q(),
        vec![q()],
        |args: Args<'_, '_>| {
            bool_answer(
                quantity_arg(&args, 0, "isLessThan")?.nano
                    < quantity_arg(&args, 1, "isLessThan")?.nano,
            )
        },
    )?;
    env.add_member_overload(
        "compareTo",
        "quantity_compare_to",
        q(),
        vec![q()],
        |args: Args<'_, '_>| {
            let (a, b) = (
                quantity_arg(&args, 0, "compareTo")?,
                quantity_arg(&args, 1, "compareTo")?,
            );
            int_answer(ordering_int(a.nano.cmp(&b.nano)))
        },
    )?;
    env.add_member_overload(
        "asApproximateFloat",
        "quantity_get_float",
        q(),
        vec![],
        |args: Args<'_, '_>| {
            let a = quantity_arg(&args, 0, "asApproximateFloat")?;
            Ok(CowVal::owned(CelDouble::from(a.nano as f64 / NANO as f64)))
        },
    )?;
    env.add_member_overload(
        "isInteger",
        "quantity_is_integer",
        q(),
        vec![],
        |args: Args<'_, '_>| {
            let a = quantity_arg(&args, 0, "isInteger")?;
            bool_answer(a.nano % NANO == 0 && i64::try_from(a.nano / NANO).is_ok())
        },
    )?;
    env.add_member_overload(
        "asInteger",
        "quantity_get_int",
        q(),
        vec![],
        |args: Args<'_, '_>| {
            let a = quantity_arg(&args, 0, "asInteger")?;
            if a.nano % NANO != 0 {
                return Err(ExecutionError::function_error(
                    "asInteger",
                    "cannot convert a fractional quantity to an integer",
                ));
            }
            i64::try_from(a.nano / NANO)
                .map(|i| CowVal::owned(CelInt::from(i)))
                .map_err(|_| {
                    ExecutionError::function_error("asInteger", "the quantity overflows an int")
                })
        },
    )?;
    env.add_member_overload(
        "add",
        "quantity_add",
        q(),
        vec![q()],
        |args: Args<'_, '_>| {
            let (a, b) = (
                quantity_arg(&args, 0, "add")?,
                quantity_arg(&args, 1, "add")?,
            );
            Ok(CowVal::owned(Quantity {
                nano: a.nano.saturating_add(b.nano),
            }))
        },
    )?;
    env.add_member_overload(
        "add",
        "quantity_add_int",
        q(),
        vec![types::INT_TYPE],
        |args: Args<'_, '_>| {
            let (a, b) = (quantity_arg(&args, 0, "add")?, int_arg(&args, 1, "add")?);
            Ok(CowVal::owned(Quantity {
                nano: a.nano.saturating_add(i128::from(b) * NANO),
            }))
        },
    )?;
    env.add_member_overload(
        "sub",
        "quantity_sub",
        q(),
        vec![q()],
        |args: Args<'_, '_>| {
            let (a, b) = (
                quantity_arg(&args, 0, "sub")?,
                quantity_arg(&args, 1, "sub")?,
            );
            Ok(CowVal::owned(Quantity {
                nano: a.nano.saturating_sub(b.nano),
            }))
        },
    )?;
    env.add_member_overload(
        "sub",
        "quantity_sub_int",
        q(),
        vec![types::INT_TYPE],
        |args: Args<'_, '_>| {
            let (a, b) = (quantity_arg(&args, 0, "sub")?, int_arg(&args, 1, "sub")?);
            Ok(CowVal::owned(Quantity {
                nano: a.nano.saturating_sub(i128::from(b) * NANO),
            }))
        },
    )?;
    Ok(())
}

fn register_semver(env: &mut Env) -> Result<(), cel::DeclarationError> {
    let s = || SEMVER_TYPE.to_owned();
    fn parse_or_error<'b, 'v>(text: &str, normalize: bool) -> Answer<'b, 'v> {
        Semver::parse(text, normalize)
            .map(CowVal::owned)
            .ok_or_else(|| {
                ExecutionError::function_error("semver", format!("invalid semver {text:?}"))
            })
    }
    env.add_overload(
        "semver",
        "string_to_semver",
        vec![types::STRING_TYPE],
        |args: Args<'_, '_>| parse_or_error(string_arg(&args, 0, "semver")?, false),
    )?;
    env.add_overload(
        "semver",
        "string_bool_to_semver",
        vec![types::STRING_TYPE, types::BOOL_TYPE],
        |args: Args<'_, '_>| {
            let normalize = args
                .get(1)
                .and_then(|a| a.downcast_ref::<CelBool>())
                .is_some_and(|b| *b.inner());
            parse_or_error(string_arg(&args, 0, "semver")?, normalize)
        },
    )?;
    env.add_overload(
        "isSemver",
        "is_semver_string",
        vec![types::STRING_TYPE],
        |args: Args<'_, '_>| {
            bool_answer(Semver::parse(string_arg(&args, 0, "isSemver")?, false).is_some())
        },
    )?;
    env.add_overload(
        "isSemver",
        "is_semver_string_bool",
        vec![types::STRING_TYPE, types::BOOL_TYPE],
        |args: Args<'_, '_>| {
            let normalize = args
                .get(1)
                .and_then(|a| a.downcast_ref::<CelBool>())
                .is_some_and(|b| *b.inner());
            bool_answer(Semver::parse(string_arg(&args, 0, "isSemver")?, normalize).is_some())
        },
    )?;
    env.add_member_overload(
        "isGreaterThan",
        "semver_is_greater_than",
        s(),
        vec![s()],
        |args: Args<'_, '_>| {
            let (a, b) = (
                semver_arg(&args, 0, "isGreaterThan")?,
                semver_arg(&args, 1, "isGreaterThan")?,
            );
            bool_answer(a.precedence(&b) == Ordering::Greater)
        },
    )?;
    env.add_member_overload(
        "isLessThan",
        "semver_is_less_than",
        s(),
        vec![s()],
        |args: Args<'_, '_>| {
            let (a, b) = (
                semver_arg(&args, 0, "isLessThan")?,
                semver_arg(&args, 1, "isLessThan")?,
            );
            bool_answer(a.precedence(&b) == Ordering::Less)
        },
    )?;
    env.add_member_overload(
        "compareTo",
        "semver_compare_to",
        s(),
        vec![s()],
        |args: Args<'_, '_>| {
            let (a, b) = (
                semver_arg(&args, 0, "compareTo")?,
                semver_arg(&args, 1, "compareTo")?,
            );
            int_answer(ordering_int(a.precedence(&b)))
        },
    )?;
    env.add_member_overload(
        "major",
        "semver_major",
        s(),
        vec![],
        |args: Args<'_, '_>| int_answer(semver_arg(&args, 0, "major")?.major as i64),
    )?;
    env.add_member_overload(
        "minor",
        "semver_minor",
        s(),
        vec![],
        |args: Args<'_, '_>| int_answer(semver_arg(&args, 0, "minor")?.minor as i64),
    )?;
    env.add_member_overload(
        "patch",
        "semver_patch",
        s(),
        vec![],
        |args: Args<'_, '_>| int_answer(semver_arg(&args, 0, "patch")?.patch as i64),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests;
