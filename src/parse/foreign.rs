//! Well-known shapes of other programs' output (an nginx error log, an
//! access log, a Java stack trace…): such lines are application output, so
//! no Linkerd rule reads them as a Linkerd component's, and the report can
//! say what the input looks like instead.

use super::event::Foreign;
use regex::Regex;
use std::sync::LazyLock;

fn rx(s: &str) -> Regex {
    Regex::new(s).expect("static regex")
}

static NGINX_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    rx(
        r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d \[(emerg|alert|crit|error|warn|notice|info|debug)\] \d+#\d+: ",
    )
});
static HTTP_ACCESS: LazyLock<Regex> = LazyLock::new(|| {
    rx(r#"^\S+ \S+ \S+ \[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}\] "[A-Z]+ \S+"#)
});
static ENVOY_ACCESS: LazyLock<Regex> =
    LazyLock::new(|| rx(r#"^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\] "[A-Z]+ \S+ \S+" \d{3} "#));
static SYSLOG: LazyLock<Regex> = LazyLock::new(|| {
    rx(
        r"^(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d \S+ [\w./-]+(\[\d+\])?: ",
    )
});
static JAVA_FRAME: LazyLock<Regex> = LazyLock::new(|| {
    rx(
        r#"^(at [\w$.<>]+\((?:[\w$]+\.(?:java|kt|scala):\d+|Native Method|Unknown Source)\)|\.\.\. \d+ more$|Exception in thread "|Caused by: [\w$.]+(Exception|Error)\b|[a-z][\w$]*(\.[a-z][\w$]*)+\.[A-Z][\w$]*(Exception|Error)(: |$))"#,
    )
});
static PYTHON: LazyLock<Regex> = LazyLock::new(|| {
    rx(
        r#"^(Traceback \(most recent call last\):|File "[^"]+", line \d+|[A-Z]\w*(Error|Exception): )"#,
    )
});

/// The shape of an unparsed line (indentation and wrappers stripped).
pub fn shape(s: &str) -> Option<Foreign> {
    let first = *s.as_bytes().first()?;
    match first {
        b'0'..=b'9' => {
            if NGINX_ERROR.is_match(s) {
                return Some(Foreign::NginxError);
            }
            if HTTP_ACCESS.is_match(s) {
                return Some(Foreign::HttpAccess);
            }
        }
        b'[' if ENVOY_ACCESS.is_match(s) => return Some(Foreign::EnvoyAccess),
        b'A'..=b'Z' if SYSLOG.is_match(s) => return Some(Foreign::Syslog),
        _ => {}
    }
    if HTTP_ACCESS.is_match(s) {
        return Some(Foreign::HttpAccess);
    }
    if JAVA_FRAME.is_match(s) {
        return Some(Foreign::JavaTrace);
    }
    if PYTHON.is_match(s) {
        return Some(Foreign::PythonTrace);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        for (line, want) in [
            ("2024/01/05 10:00:00 [error] 31#31: *9 connect() failed (111: Connection refused) while connecting to upstream", Foreign::NginxError),
            (r#"10.0.0.1 - - [05/Jan/2024:10:00:00 +0000] "GET / HTTP/1.1" 502 157 "-" "curl/8.0""#, Foreign::HttpAccess),
            (r#"[2024-01-05T10:00:00.123Z] "GET /api HTTP/1.1" 503 UF 0 91 3 - "-" "curl/8.0" "id" "api" "10.0.0.9:8080""#, Foreign::EnvoyAccess),
            ("Jan  5 10:00:00 node-1 kernel: [12.3] eth0: link up", Foreign::Syslog),
            ("at com.example.Client.call(Client.java:42)", Foreign::JavaTrace),
            ("Caused by: java.net.ConnectException: Connection refused", Foreign::JavaTrace),
            ("java.net.SocketTimeoutException: connect timed out", Foreign::JavaTrace),
            ("Traceback (most recent call last):", Foreign::PythonTrace),
        ] {
            assert_eq!(shape(line), Some(want), "{line}");
        }
        assert_eq!(shape("Connection refused by the proxy, we think"), None);
    }
}
