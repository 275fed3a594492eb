//! Reading tool arguments with messages an agent can act on. By hand rather than through
//! serde structs so each wrong argument gets its own `Error:` naming the parameter.

use super::{fail, ToolOutput};
use serde_json::{Map, Value};

pub type Args = Map<String, Value>;

pub fn string<'a>(args: &'a Args, name: &str) -> Result<&'a str, ToolOutput> {
    match args.get(name) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => Err(fail(format!("Missing required parameter '{name}'"))),
        Some(_) => Err(fail(format!("Parameter '{name}' must be a string"))),
    }
}

pub fn opt_string<'a>(args: &'a Args, name: &str) -> Result<Option<&'a str>, ToolOutput> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(fail(format!("Parameter '{name}' must be a string"))),
    }
}

/// A whole number ≥ 0. JSON clients may send `5.0` for 5; that is accepted.
pub fn opt_count(args: &Args, name: &str) -> Result<Option<u64>, ToolOutput> {
    let bad = || {
        fail(format!(
            "Parameter '{name}' must be a whole number of 0 or more"
        ))
    };
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match (n.as_u64(), n.as_f64()) {
            (Some(v), _) => Ok(Some(v)),
            (None, Some(f)) if f >= 0.0 && f.fract() == 0.0 && f < 9.0e15 => Ok(Some(f as u64)),
            _ => Err(bad()),
        },
        Some(_) => Err(bad()),
    }
}

pub fn opt_bool(args: &Args, name: &str) -> Result<Option<bool>, ToolOutput> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(fail(format!("Parameter '{name}' must be true or false"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Args {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn counts_accept_whole_numbers_only() {
        let a = args(json!({"a": 3, "b": 4.0, "c": -1, "d": 1.5, "e": "7"}));
        assert_eq!(opt_count(&a, "a").unwrap(), Some(3));
        assert_eq!(opt_count(&a, "b").unwrap(), Some(4));
        assert_eq!(opt_count(&a, "zz").unwrap(), None);
        for bad in ["c", "d", "e"] {
            let e = opt_count(&a, bad).unwrap_err();
            assert!(
                e.is_error && e.text.starts_with("Error: Parameter"),
                "{e:?}"
            );
        }
    }

    #[test]
    fn strings_name_the_missing_parameter() {
        let a = args(json!({"path": 1}));
        assert_eq!(
            string(&a, "content").unwrap_err().text,
            "Error: Missing required parameter 'content'"
        );
        assert_eq!(
            string(&a, "path").unwrap_err().text,
            "Error: Parameter 'path' must be a string"
        );
    }
}
