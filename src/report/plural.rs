//! Counts in prose: `1 line`, `7 lines`. Every report formats its counts
//! through here, so no output says `1 lines` or `Seen 1 times`.

/// `n` with the noun that agrees with it.
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// How often: `once`, `2 times`.
pub fn times(n: u64) -> String {
    if n == 1 {
        "once".to_string()
    } else {
        format!("{n} times")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_everything_else_plural() {
        assert_eq!(count(1, "line", "lines"), "1 line");
        assert_eq!(count(0, "line", "lines"), "0 lines");
        assert_eq!(count(2, "line", "lines"), "2 lines");
        assert_eq!(times(1), "once");
        assert_eq!(times(3), "3 times");
    }
}
