//! The conditions of a metric rule: comparisons between aggregates of its
//! series (`open.max == 0`, `pending.sum >= 1`, `fds.max >= 0.9 *
//! max_fds.max`, `expiry.min - now < 25200`), with `+ - * /` and
//! parentheses. `now` is the snapshot's own clock.

/// What a series reference reads of the series a group holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agg {
    /// How many series.
    Count,
    Sum,
    /// How many series are at 0.
    Zeros,
    Min,
    Max,
}

impl Agg {
    fn parse(s: &str) -> Option<Agg> {
        Some(match s {
            "count" => Agg::Count,
            "sum" => Agg::Sum,
            "zeros" => Agg::Zeros,
            "min" => Agg::Min,
            "max" => Agg::Max,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Num(f64),
    Ref(usize, Agg),
    Now,
    Bin(Box<Expr>, u8, Box<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Lt,
    Le,
    Eq,
    Ne,
    Ge,
    Gt,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cond {
    lhs: Expr,
    cmp: Cmp,
    rhs: Expr,
}

/// What a condition is evaluated against.
pub trait Env {
    /// The aggregate of the series called by the `i`-th alias.
    fn get(&self, series: usize, agg: Agg) -> f64;
    fn now(&self) -> Option<f64>;
}

impl Cond {
    /// Parses `text`; series are named by `aliases`.
    pub fn parse(text: &str, aliases: &[String]) -> Result<Cond, String> {
        let toks = tokens(text)?;
        let at = toks
            .iter()
            .position(|t| cmp_of(t).is_some())
            .ok_or_else(|| format!("`{text}` compares nothing (use <, <=, ==, !=, >=, >)"))?;
        let cmp = cmp_of(&toks[at]).expect("found");
        let mut p = Parser {
            toks: &toks[..at],
            i: 0,
            aliases,
        };
        let lhs = p.whole()?;
        let mut p = Parser {
            toks: &toks[at + 1..],
            i: 0,
            aliases,
        };
        let rhs = p.whole()?;
        Ok(Cond { lhs, cmp, rhs })
    }

    /// Whether the comparison holds; `None` when it reads `now` and the
    /// snapshot has no clock.
    pub fn holds(&self, env: &impl Env) -> Option<bool> {
        let (a, b) = (eval(&self.lhs, env)?, eval(&self.rhs, env)?);
        Some(match self.cmp {
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
            Cmp::Ge => a >= b,
            Cmp::Gt => a > b,
        })
    }

    /// Reads the snapshot's clock.
    pub fn uses_now(&self) -> bool {
        fn has(e: &Expr) -> bool {
            match e {
                Expr::Now => true,
                Expr::Bin(a, _, b) => has(a) || has(b),
                _ => false,
            }
        }
        has(&self.lhs) || has(&self.rhs)
    }
}

fn eval(e: &Expr, env: &impl Env) -> Option<f64> {
    Some(match e {
        Expr::Num(n) => *n,
        Expr::Ref(i, a) => env.get(*i, *a),
        Expr::Now => env.now()?,
        Expr::Bin(a, op, b) => {
            let (a, b) = (eval(a, env)?, eval(b, env)?);
            match op {
                b'+' => a + b,
                b'-' => a - b,
                b'*' => a * b,
                _ => a / b,
            }
        }
    })
}

fn cmp_of(t: &str) -> Option<Cmp> {
    Some(match t {
        "<" => Cmp::Lt,
        "<=" => Cmp::Le,
        "==" => Cmp::Eq,
        "!=" => Cmp::Ne,
        ">=" => Cmp::Ge,
        ">" => Cmp::Gt,
        _ => return None,
    })
}

fn tokens(s: &str) -> Result<Vec<String>, String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b"_.".contains(&b[i])) {
                // `1e+06`: an exponent's sign belongs to the number.
                let exp = (b[i] == b'e' || b[i] == b'E') && b[start].is_ascii_digit();
                i += 1;
                if exp && i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                    i += 1;
                }
            }
        } else if b"<>=!".contains(&c) {
            i += 1;
            if i < b.len() && b[i] == b'=' {
                i += 1;
            }
        } else if b"+-*/()".contains(&c) {
            i += 1;
        } else {
            return Err(format!("unexpected `{}` in `{s}`", c as char));
        }
        out.push(s[start..i].to_string());
    }
    Ok(out)
}

struct Parser<'t> {
    toks: &'t [String],
    i: usize,
    aliases: &'t [String],
}

impl Parser<'_> {
    fn whole(&mut self) -> Result<Expr, String> {
        let e = self.sum()?;
        match self.toks.get(self.i) {
            None => Ok(e),
            Some(t) => Err(format!("unexpected `{t}`")),
        }
    }

    fn sum(&mut self) -> Result<Expr, String> {
        let mut e = self.product()?;
        while let Some(op) = self.op(b"+-") {
            e = Expr::Bin(Box::new(e), op, Box::new(self.product()?));
        }
        Ok(e)
    }

    fn product(&mut self) -> Result<Expr, String> {
        let mut e = self.atom()?;
        while let Some(op) = self.op(b"*/") {
            e = Expr::Bin(Box::new(e), op, Box::new(self.atom()?));
        }
        Ok(e)
    }

    fn op(&mut self, ops: &[u8]) -> Option<u8> {
        let t = self.toks.get(self.i)?;
        let op = *t.as_bytes().first()?;
        (t.len() == 1 && ops.contains(&op)).then(|| {
            self.i += 1;
            op
        })
    }

    fn atom(&mut self) -> Result<Expr, String> {
        let t = self.toks.get(self.i).ok_or("an expression ends too soon")?;
        self.i += 1;
        if t == "(" {
            let e = self.sum()?;
            return match self.toks.get(self.i) {
                Some(c) if c == ")" => {
                    self.i += 1;
                    Ok(e)
                }
                _ => Err("a `(` is not closed".into()),
            };
        }
        if t == "now" {
            return Ok(Expr::Now);
        }
        if let Ok(n) = t.parse::<f64>() {
            return Ok(Expr::Num(n));
        }
        let (name, agg) = t
            .split_once('.')
            .ok_or_else(|| format!("`{t}` is neither a number, `now` nor SERIES.AGGREGATE"))?;
        let i = self
            .aliases
            .iter()
            .position(|a| a == name)
            .ok_or_else(|| format!("no series is called `{name}` (`as` names them)"))?;
        let agg = Agg::parse(agg)
            .ok_or_else(|| format!("`{agg}` is no aggregate (count, sum, zeros, min, max)"))?;
        Ok(Expr::Ref(i, agg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct E;
    impl Env for E {
        fn get(&self, series: usize, agg: Agg) -> f64 {
            match (series, agg) {
                (0, Agg::Max) => 0.0,
                (0, Agg::Count) => 3.0,
                (1, Agg::Sum) => 31.0,
                _ => 1048576.0,
            }
        }
        fn now(&self) -> Option<f64> {
            Some(100.0)
        }
    }

    fn holds(s: &str) -> Option<bool> {
        let a = ["open".to_string(), "fds".to_string(), "max".to_string()];
        Cond::parse(s, &a).unwrap().holds(&E)
    }

    #[test]
    fn conditions_compare_aggregates() {
        assert_eq!(holds("open.max == 0"), Some(true));
        assert_eq!(holds("open.count >= 1"), Some(true));
        assert_eq!(holds("fds.sum >= 0.9 * max.max"), Some(false));
        assert_eq!(holds("(fds.sum + 1) / 2 == 16"), Some(true));
        assert_eq!(holds("now - 25200 < 1e+06"), Some(true));
        assert_eq!(holds("2 - 1 - 1 == 0"), Some(true));
    }

    #[test]
    fn bad_conditions_say_why() {
        let a = ["open".to_string()];
        for (s, want) in [
            ("open.max", "compares nothing"),
            ("close.max == 0", "no series is called `close`"),
            ("open.avg == 0", "no aggregate"),
            ("open.max == (1", "not closed"),
            ("open.max == 1 2", "unexpected `2`"),
            ("open.max == $", "unexpected `$`"),
        ] {
            let e = Cond::parse(s, &a).unwrap_err();
            assert!(e.contains(want), "{s}: {e}");
        }
    }
}
