//! Reading a tool's JSON Schema: the one reading that parsing and constraints share.
//!
//! A request's tool schema is written by its user, rendered into the prompt by the
//! model's chat template, and followed by the model when it writes a value. Two parts of
//! the engine read it: parsing, to type a value the markup writes as text (XML-like
//! values, Gemma's bare scalars) and to find a nested value's schema; constraints, to
//! write the forms a value may take under `tool_choice="required"` or a named function.
//! Both read it here, so what a constraint lets the model write is what parsing reads
//! back as the type the schema asked for. What this module reads:
//!
//! - [`Types`]: the JSON types a value may take, in the order raw text is tried;
//! - [`properties`], [`property`], [`member`], [`items`]: the keys a schema declares,
//!   which are required, and the schema of a key's or an item's value;
//! - [`enum_values`]: the values an `enum` or `const` allows;
//! - [`normalized`]: the schema as a JSON constraint engine must receive it to read it
//!   this way.
//!
//! It types no value itself: turning raw text into JSON is the grammars' work
//! (`grammars::schema` for XML-like values), writing forms is the constraint writers'.
//!
//! # The rules
//!
//! Where the JSON Schema specification says what a keyword means, that is the reading.
//! Where schemas in the wild go beyond it, the reading follows what the template shows
//! the model and what a model then writes:
//!
//! 1. **Type names.** `type` is one name or a list of names. Besides JSON Schema's seven
//!    (`string`, `integer`, `number`, `boolean`, `null`, `object`, `array`), the Python
//!    spellings that hand-written schemas use are read as the JSON type they name:
//!    `str`, `int`, `float` and `double`, `bool`, `dict`, `list` and `tuple`. Templates
//!    render the name as written (Qwen3-Coder's writes `<type>int</type>`), and a model
//!    told `int` writes an integer.
//! 2. **Unknown names.** A name outside those, a list holding a non-name, or an empty
//!    list gives no type information: any value is allowed. The names beside it that are
//!    known still say how raw text is tried first ([`Types::any`]).
//! 3. **`nullable: true`** (OpenAPI 3.0's keyword, which transformers' `get_json_schema`
//!    writes for an optional argument and Gemma 4's template renders to the model as
//!    `nullable:true`) adds `null` to the types `type` names, and only to those (as
//!    OpenAPI 3.0.3 says: without `type` it has no effect).
//! 4. **`anyOf` / `oneOf`.** A value may take the types of any alternative, in the
//!    alternatives' order; an alternative without type information lets it take any.
//!    Every keyword of a schema applies at once (JSON Schema), so `type`, `anyOf` and
//!    `oneOf` narrow one another (`{"type": "object", "anyOf": [{"required": ["a"]},
//!    ...]}` is an object). A keyword that would leave no type at all (a contradictory
//!    schema) is ignored rather than allowing nothing. An `anyOf` / `oneOf` that is not
//!    a non-empty list is not read.
//! 5. **`enum` / `const`.** `const` is the one value allowed (an `enum` beside it can
//!    only repeat it); otherwise a non-empty `enum` lists them (an empty one is not
//!    read). The values' own types are the value's types, with `string` last: raw text
//!    that spells a non-string member (`1`, `true`, `null`) is that member, as no
//!    string member is spelt so unless the enum holds both. These come first; `type`,
//!    `anyOf` and `oneOf` then narrow them.
//! 6. **No type information** (no keyword above, or none readable): any value. Raw
//!    text is then read as text: a string.
//! 7. **Order.** Raw text is tried against the types in the order the first keyword
//!    read gives them (`enum` / `const`, else `type`, else `anyOf`, else `oneOf`); in
//!    a union the declared order is the schema author's preference. The grammars
//!    convert by it (a `string` type takes any text, so types after it are not tried).
//! 8. **Properties.** A schema declares the keys in `properties`, in their order, and
//!    the required ones in `required`; one that declares none allows any key unless
//!    `additionalProperties` is `false` (as xgrammar's XML styles read it). A malformed
//!    `required` is read as iterating it in Python would read it (a string as its
//!    characters, an object as its keys), as the first constraint builder did.
//! 9. **Nested values.** The schema of a key inside an object value is the object
//!    schema's `properties` entry, else the entry of the first `anyOf` / `oneOf`
//!    alternative that declares the key (the value being an object with that key, only
//!    such an alternative can apply); an array's items likewise (`items`, else the first
//!    alternative's). A tool's own parameters are read from its schema's `properties`
//!    only, as the constraint lists them.
//! 10. **Constraint engines.** llguidance and xgrammar read JSON Schema's own names
//!     only (llguidance refuses `{"type": "int"}` with "Invalid type") and ignore
//!     `nullable`. A schema a constraint embeds is therefore [`normalized`] first: the
//!     names of rule 1 made canonical, `nullable` folded into `type`, a `type` of rule 2
//!     dropped, at every depth. A contradictory schema is passed as written.
//!
//! Schemas come from requests: reading is bounded in depth ([`MAX_DEPTH`]) and never
//! fails; a malformed keyword is read as absent.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// How deep `anyOf` / `oneOf` alternatives are followed, and how deep [`normalized`]
/// rewrites: schemas are request data, and an absurdly nested one must not recurse
/// without bound. Deeper alternatives read as allowing any value.
pub(crate) const MAX_DEPTH: usize = 16;

/// How deep [`normalized`] rewrites nested schemas (properties of properties...).
const MAX_NORMALIZE_DEPTH: usize = 64;

/// A JSON type, as a schema names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Ty {
    /// `string` (also `str`).
    String,
    /// `integer` (also `int`).
    Integer,
    /// `number` (also `float`, `double`).
    Number,
    /// `boolean` (also `bool`).
    Boolean,
    /// `null`.
    Null,
    /// `object` (also `dict`).
    Object,
    /// `array` (also `list`, `tuple`).
    Array,
}

impl Ty {
    /// The type a name stands for: a JSON Schema name or a Python spelling (rule 1 of
    /// the module docs); None for any other name.
    pub(crate) fn from_name(name: &str) -> Option<Ty> {
        Some(match name {
            "string" | "str" => Ty::String,
            "integer" | "int" => Ty::Integer,
            "number" | "float" | "double" => Ty::Number,
            "boolean" | "bool" => Ty::Boolean,
            "null" => Ty::Null,
            "object" | "dict" => Ty::Object,
            "array" | "list" | "tuple" => Ty::Array,
            _ => return None,
        })
    }

    /// The type's JSON Schema name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Ty::String => "string",
            Ty::Integer => "integer",
            Ty::Number => "number",
            Ty::Boolean => "boolean",
            Ty::Null => "null",
            Ty::Object => "object",
            Ty::Array => "array",
        }
    }

    /// The type of a JSON value: a number without fraction or exponent in its source
    /// is an integer.
    pub(crate) fn of_value(v: &Value) -> Ty {
        match v {
            Value::Null => Ty::Null,
            Value::Bool(_) => Ty::Boolean,
            Value::Number(n) if n.is_i64() || n.is_u64() => Ty::Integer,
            Value::Number(_) => Ty::Number,
            Value::String(_) => Ty::String,
            Value::Array(_) => Ty::Array,
            Value::Object(_) => Ty::Object,
        }
    }
}

/// The JSON types a schema allows a value (see the module docs for how they are read).
///
/// Two parts: the types the schema declares, in the order raw text is tried against
/// them, and whether a value of any other type is allowed too (an alternative or a
/// name that gives no type information). A schema that says nothing declares no type
/// and allows any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Types {
    declared: Vec<Ty>,
    any: bool,
}

impl Types {
    /// No type information: any value.
    pub(crate) fn unrestricted() -> Types {
        Types {
            declared: Vec::new(),
            any: true,
        }
    }

    /// Nothing yet (the start of a union of alternatives).
    fn nothing() -> Types {
        Types {
            declared: Vec::new(),
            any: false,
        }
    }

    /// The types a value of `schema` may take; no schema (or a `null` or boolean one)
    /// allows any.
    pub(crate) fn of(schema: Option<&Value>) -> Types {
        schema.map_or_else(Types::unrestricted, |s| read(s, 0))
    }

    /// The declared types, in the order raw text is tried; no repeats.
    pub(crate) fn declared(&self) -> &[Ty] {
        &self.declared
    }

    /// Whether a value of a type not declared is allowed too.
    pub(crate) fn any(&self) -> bool {
        self.any
    }

    /// Whether the schema declares `t`.
    pub(crate) fn has(&self, t: Ty) -> bool {
        self.declared.contains(&t)
    }

    /// Whether a value written as raw text may be any text: a string is allowed (a
    /// declared `string`, or any type).
    pub(crate) fn is_text(&self) -> bool {
        self.any || self.declared.is_empty() || self.has(Ty::String)
    }

    /// Whether `t` is the only type allowed.
    pub(crate) fn only(&self, t: Ty) -> bool {
        !self.any && self.declared == [t]
    }

    /// The types to try raw text against, in order; never empty: without a declared
    /// type, raw text is a string (rule 6).
    pub(crate) fn into_try(self) -> Vec<Ty> {
        if self.declared.is_empty() {
            vec![Ty::String]
        } else {
            self.declared
        }
    }

    fn push(&mut self, t: Ty) {
        if !self.declared.contains(&t) {
            self.declared.push(t);
        }
    }

    /// Either of two readings (an `anyOf` / `oneOf` alternative added to the others).
    fn union(mut self, other: Types) -> Types {
        for t in other.declared {
            self.push(t);
        }
        self.any |= other.any;
        self
    }

    /// Both readings at once (another keyword of the same schema): the types both
    /// allow, this one's first, in its order (rule 7); a keyword that would leave no
    /// type is ignored (rule 4).
    fn narrowed(self, other: Types) -> Types {
        if other.any && other.declared.is_empty() {
            return self;
        }
        if self.any && self.declared.is_empty() {
            return other;
        }
        // Types one side declares are allowed by the other when it declares them too,
        // or allows any type.
        let mut both = Types {
            declared: Vec::new(),
            any: self.any && other.any,
        };
        for t in &self.declared {
            if other.any || other.has(*t) {
                both.push(*t);
            }
        }
        for t in &other.declared {
            if self.any {
                both.push(*t);
            }
        }
        if both.declared.is_empty() && !both.any {
            self
        } else {
            both
        }
    }

    /// The types of enum members: non-string ones in member order, then `string`
    /// (rule 5).
    fn of_values(values: &[&Value]) -> Types {
        let mut t = Types::nothing();
        for v in values {
            let ty = Ty::of_value(v);
            if ty != Ty::String {
                t.push(ty);
            }
        }
        if values.iter().any(|v| v.is_string()) {
            t.push(Ty::String);
        }
        t
    }
}

/// The reading of `type` (rules 1-3): None when the schema has no usable `type`.
fn type_keyword(s: &Map<String, Value>) -> Option<Types> {
    let mut t = match s.get("type")? {
        Value::String(name) => Types {
            declared: vec![Ty::from_name(name)?],
            any: false,
        },
        Value::Array(names) if !names.is_empty() => {
            let mut t = Types::nothing();
            for n in names {
                match n.as_str().and_then(Ty::from_name) {
                    Some(ty) => t.push(ty),
                    None => t.any = true,
                }
            }
            t
        }
        _ => return None,
    };
    if s.get("nullable") == Some(&Value::Bool(true)) {
        t.push(Ty::Null);
    }
    Some(t)
}

/// The union of an `anyOf` / `oneOf` list's alternatives; None when the keyword is
/// absent or not a non-empty list.
fn alternatives(s: &Map<String, Value>, key: &str, depth: usize) -> Option<Types> {
    let Some(Value::Array(alts)) = s.get(key) else {
        return None;
    };
    if alts.is_empty() {
        return None;
    }
    Some(
        alts.iter()
            .fold(Types::nothing(), |u, a| u.union(read(a, depth + 1))),
    )
}

fn read(schema: &Value, depth: usize) -> Types {
    let Some(s) = schema.as_object() else {
        return Types::unrestricted();
    };
    if depth > MAX_DEPTH {
        return Types::unrestricted();
    }
    let mut t = match enum_values(schema) {
        Some(values) => Types::of_values(&values),
        None => Types::unrestricted(),
    };
    if let Some(ty) = type_keyword(s) {
        t = t.narrowed(ty);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = alternatives(s, key, depth) {
            t = t.narrowed(alts);
        }
    }
    t
}

/// The values an `enum` or `const` allows (rule 5): `const`'s one value, else a
/// non-empty `enum`'s; None when the schema lists none.
pub(crate) fn enum_values(schema: &Value) -> Option<Vec<&Value>> {
    let s = schema.as_object()?;
    if let Some(c) = s.get("const") {
        return Some(vec![c]);
    }
    match s.get("enum") {
        Some(Value::Array(e)) if !e.is_empty() => Some(e.iter().collect()),
        _ => None,
    }
}

/// The keys an object schema declares (rule 8).
#[derive(Debug)]
pub(crate) struct Properties<'a> {
    /// Declared properties with their schemas, in schema order.
    pub declared: Vec<(&'a str, &'a Value)>,
    /// The names in `required`.
    pub required: Vec<String>,
    /// Whether any key may be written: the schema declares no `properties` and does not
    /// forbid `additionalProperties`.
    pub open: bool,
}

impl Properties<'_> {
    /// Whether `key` is required.
    pub(crate) fn is_required(&self, key: &str) -> bool {
        self.required.iter().any(|r| r == key)
    }
}

/// The keys `schema` declares (rule 8). A schema that declares `properties` allows
/// those keys only; one that declares none allows any key (unless
/// `additionalProperties` is false); a schema that is not an object allows any key.
pub(crate) fn properties(schema: &Value) -> Properties<'_> {
    let Value::Object(s) = schema else {
        return Properties {
            declared: Vec::new(),
            required: Vec::new(),
            open: true,
        };
    };
    let required = required(s.get("required"));
    match s.get("properties") {
        Some(Value::Object(props)) => Properties {
            declared: props.iter().map(|(k, v)| (k.as_str(), v)).collect(),
            required,
            open: false,
        },
        _ => Properties {
            declared: Vec::new(),
            required,
            open: s.get("additionalProperties") != Some(&Value::Bool(false)),
        },
    }
}

/// The names `required` lists: an array's strings; a malformed value as iterating it in
/// Python reads it (a string as its characters, an object as its keys); any other value
/// requires nothing.
fn required(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        Some(Value::String(s)) => s.chars().map(String::from).collect(),
        Some(Value::Object(m)) => m.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// The schema of parameter `key` in a tool's parameter schema: its own `properties`
/// entry, as [`properties`] lists it.
pub(crate) fn property<'a>(parameters: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    parameters?.get("properties")?.as_object()?.get(key)
}

/// The schema of `key` inside an object value of `schema` (rule 9): its `properties`
/// entry, else that of the first `anyOf` / `oneOf` alternative declaring the key.
pub(crate) fn member<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    nested(schema, 0, &|s| s.get("properties")?.as_object()?.get(key))
}

/// The schema of the items of an array value of `schema` (rule 9): its `items`, else
/// the first `anyOf` / `oneOf` alternative's.
pub(crate) fn items(schema: &Value) -> Option<&Value> {
    nested(schema, 0, &|s| s.get("items"))
}

/// `get` of the schema, else of its alternatives, depth first in order.
fn nested<'a>(
    schema: &'a Value,
    depth: usize,
    get: &dyn Fn(&'a Map<String, Value>) -> Option<&'a Value>,
) -> Option<&'a Value> {
    let s = schema.as_object()?;
    if depth > MAX_DEPTH {
        return None;
    }
    if let Some(v) = get(s) {
        return Some(v);
    }
    ["anyOf", "oneOf"]
        .iter()
        .filter_map(|k| s.get(*k)?.as_array())
        .flatten()
        .find_map(|alt| nested(alt, depth + 1, get))
}

/// Keywords whose value is one schema.
const ONE_SCHEMA: [&str; 11] = [
    "additionalProperties",
    "items",
    "additionalItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
];
/// Keywords whose value is a list of schemas.
const SCHEMA_LIST: [&str; 5] = ["anyOf", "oneOf", "allOf", "prefixItems", "items"];
/// Keywords whose value maps names to schemas.
const SCHEMA_MAP: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// `schema` as a JSON constraint engine must receive it to read it as this module does
/// (rule 10): type names canonical, `nullable: true` folded into `type`, a `type` that
/// gives no type information removed, in every nested schema. Borrowed when nothing
/// changes (the common case).
pub(crate) fn normalized(schema: &Value) -> Cow<'_, Value> {
    let mut out = schema.clone();
    if normalize(&mut out, 0) {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(schema)
    }
}

/// Rewrites `schema` in place; whether anything changed.
fn normalize(schema: &mut Value, depth: usize) -> bool {
    let Value::Object(s) = schema else {
        return false;
    };
    if depth > MAX_NORMALIZE_DEPTH {
        return false;
    }
    let mut changed = normalize_type(s);
    for (key, v) in s.iter_mut() {
        let k = key.as_str();
        if ONE_SCHEMA.contains(&k) && v.is_object() {
            changed |= normalize(v, depth + 1);
        }
        if SCHEMA_LIST.contains(&k) {
            if let Value::Array(list) = v {
                for sub in list {
                    changed |= normalize(sub, depth + 1);
                }
            }
        }
        if SCHEMA_MAP.contains(&k) {
            if let Value::Object(map) = v {
                for sub in map.values_mut() {
                    changed |= normalize(sub, depth + 1);
                }
            }
        }
    }
    changed
}

/// One schema's `type` (rules 1-3) in canonical names, a name or a list as it was
/// written (a list when `nullable` adds `null`); None to remove it.
fn canonical_type(s: &Map<String, Value>) -> Option<Value> {
    let t = type_keyword(s).filter(|t| !t.any)?;
    let name = |t: &Ty| Value::String(t.name().to_owned());
    Some(match (s.get("type"), t.declared.as_slice()) {
        (Some(Value::String(_)), [one]) => name(one),
        (_, many) => Value::Array(many.iter().map(name).collect()),
    })
}

/// Makes `s`'s `type` canonical; whether it changed.
fn normalize_type(s: &mut Map<String, Value>) -> bool {
    let Some(old) = s.get("type") else {
        return false;
    };
    match canonical_type(s) {
        Some(new) if &new == old => false,
        Some(new) => {
            s.insert("type".to_owned(), new);
            true
        }
        None => {
            s.shift_remove("type");
            true
        }
    }
}

#[cfg(test)]
mod tests;
