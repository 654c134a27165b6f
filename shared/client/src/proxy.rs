//! The proxy for a request to the API server, exactly as kubectl chooses it: a kubeconfig
//! cluster's `proxy-url` when it has one, else the environment as Go's
//! `golang.org/x/net/http/httpproxy` reads it (what `http.ProxyFromEnvironment`, and so
//! client-go, uses):
//!
//! - `HTTPS_PROXY` (then `https_proxy`) for an `https://` server, `HTTP_PROXY` (then
//!   `http_proxy`) for an `http://` one; the first that is set and not empty;
//! - a value without a scheme (`proxy:3128`, `alice:pw@proxy:3128`) is `http://` + it;
//! - `localhost` and loopback addresses are never proxied;
//! - `NO_PROXY` (then `no_proxy`) is judged against the **server's** host and port:
//!   comma-separated, case-insensitive, empty entries skipped; `*` matches everything; an
//!   IPv4 or IPv6 CIDR matches the addresses in it; an IP (optionally `IP:port`,
//!   `[IPv6]:port`) matches that address; a name matches itself and its subdomains
//!   (`example.com`, `.example.com` and `*.example.com` all match `api.example.com`; only
//!   the bare form matches `example.com` itself), on any port or on the port it names.
//!
//! Pure functions over the variables' values; [`from_env`] reads them.

use std::net::IpAddr;

/// The proxy settings of the environment (or given values, in tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyEnv {
    pub http_proxy: Option<String>,
    pub https_proxy: Option<String>,
    pub no_proxy: Option<String>,
}

/// Why a proxy setting cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the proxy {shown} is not a URL")]
pub struct BadProxy {
    /// The value with its credentials taken out.
    pub shown: String,
}

impl ProxyEnv {
    /// Reads the variables through `var` (the first of each pair that is set and not empty).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let first = |names: [&str; 2]| names.iter().find_map(|n| var(n).filter(|v| !v.is_empty()));
        ProxyEnv {
            http_proxy: first(["HTTP_PROXY", "http_proxy"]),
            https_proxy: first(["HTTPS_PROXY", "https_proxy"]),
            no_proxy: first(["NO_PROXY", "no_proxy"]),
        }
    }

    /// The proxy for requests to `server`, `None` for a direct connection.
    pub fn proxy_for(&self, server: &http::Uri) -> Result<Option<http::Uri>, BadProxy> {
        let https = server.scheme_str() == Some("https");
        let proxy = if https {
            &self.https_proxy
        } else {
            &self.http_proxy
        };
        let Some(proxy) = proxy.as_deref() else {
            return Ok(None);
        };
        let Some(host) = server.host() else {
            return Ok(None);
        };
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let port = server
            .port_u16()
            .unwrap_or(if https { 443 } else { 80 })
            .to_string();
        if !use_proxy(&host, &port, self.no_proxy.as_deref().unwrap_or_default()) {
            return Ok(None);
        }
        parse_proxy(proxy).map(Some)
    }
}

/// The environment's proxy settings.
pub fn from_env() -> ProxyEnv {
    ProxyEnv::from_vars(|name| std::env::var(name).ok())
}

/// A proxy URL as Go's `parseProxy` reads it: one without a scheme or host (`proxy:3128`,
/// which reads as scheme `proxy`) is tried again as `http://` + it.
pub fn parse_proxy(proxy: &str) -> Result<http::Uri, BadProxy> {
    let bad = || BadProxy {
        shown: without_userinfo(proxy),
    };
    let has_scheme_and_host =
        |uri: &http::Uri| uri.scheme().is_some() && uri.host().is_some_and(|h| !h.is_empty());
    match proxy.parse::<http::Uri>() {
        Ok(uri) if has_scheme_and_host(&uri) && proxy.contains("://") => Ok(uri),
        _ => format!("http://{proxy}")
            .parse::<http::Uri>()
            .ok()
            .filter(has_scheme_and_host)
            .ok_or_else(bad),
    }
}

/// The user and password of a proxy value (with or without a scheme), as written and
/// percent-decoded: what no message may show.
pub fn credentials(proxy: &str) -> Vec<String> {
    let Some(userinfo) = userinfo(proxy) else {
        return Vec::new();
    };
    let mut out = vec![userinfo.to_string()];
    if let Some((user, password)) = userinfo.split_once(':') {
        out.push(user.to_string());
        out.push(password.to_string());
    } else {
        out.push(userinfo.to_string());
    }
    let decoded: Vec<String> = out.iter().map(|v| percent_decode(v)).collect();
    out.extend(decoded);
    out.retain(|v| !v.is_empty());
    out.sort();
    out.dedup();
    out
}

/// The `user:password` of a proxy value, with or without a scheme.
pub fn userinfo(proxy: &str) -> Option<&str> {
    let rest = proxy.split_once("://").map_or(proxy, |(_, rest)| rest);
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    authority.rsplit_once('@').map(|(userinfo, _)| userinfo)
}

/// The userinfo as written and percent-decoded, each with the `@` that ends it in a URL.
pub fn userinfo_in_urls(proxy: &str) -> Vec<String> {
    let Some(userinfo) = userinfo(proxy) else {
        return Vec::new();
    };
    let mut out = vec![
        format!("{userinfo}@"),
        format!("{}@", percent_decode(userinfo)),
    ];
    out.dedup();
    out
}

/// `proxy` with its userinfo replaced by `[redacted]`.
pub fn without_userinfo(proxy: &str) -> String {
    let (scheme, rest) = match proxy.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), proxy),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rsplit_once('@') {
        Some((_, host)) => format!("{scheme}[redacted]@{host}{}", &rest[end..]),
        None => proxy.to_string(),
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(hex) = std::str::from_utf8(&bytes[i + 1..i + 3])
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether a request to `host:port` goes through the proxy under `no_proxy` (Go's
/// `useProxy` with the matchers its `init` builds).
fn use_proxy(host: &str, port: &str, no_proxy: &str) -> bool {
    if host == "localhost" {
        return false;
    }
    let ip: Option<IpAddr> = host.parse().ok();
    if ip.is_some_and(|ip| ip.is_loopback()) {
        return false;
    }
    for entry in no_proxy.split(',') {
        let entry = entry.trim().to_ascii_lowercase();
        if entry.is_empty() {
            continue;
        }
        if entry == "*" {
            return false;
        }
        if let Ok(net) = entry.parse::<ipnet::IpNet>() {
            if ip.is_some_and(|ip| net.contains(&ip)) {
                return false;
            }
            continue;
        }
        let (entry_host, entry_port) = split_host_port(&entry);
        if entry_host.is_empty() {
            continue;
        }
        let port_matches = entry_port.is_none_or(|p| p == port);
        if let Ok(entry_ip) = entry_host.parse::<IpAddr>() {
            if ip == Some(entry_ip) && port_matches {
                return false;
            }
            continue;
        }
        // `*.example.com` is `.example.com`; a bare `example.com` also matches itself.
        let name = entry_host.strip_prefix('*').unwrap_or(entry_host);
        let (suffix, match_host) = match name.strip_prefix('.') {
            Some(_) => (name.to_string(), false),
            None => (format!(".{name}"), true),
        };
        if (host.ends_with(&suffix) || (match_host && host == &suffix[1..])) && port_matches {
            return false;
        }
    }
    true
}

/// `host:port`, `[v6]:port` or a bare host, as Go's `net.SplitHostPort` and the fallback
/// of `httpproxy` read a `NO_PROXY` entry.
fn split_host_port(entry: &str) -> (&str, Option<&str>) {
    if let Some(rest) = entry.strip_prefix('[')
        && let Some((host, after)) = rest.split_once(']')
    {
        return match after.strip_prefix(':') {
            Some(port) => (host, Some(port)),
            None => (host, None),
        };
    }
    match entry.rsplit_once(':') {
        // More than one colon without brackets is a bare IPv6 address.
        Some((host, port)) if !host.contains(':') => (host, Some(port)),
        _ => (entry, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(https: &str, no_proxy: &str) -> ProxyEnv {
        ProxyEnv {
            http_proxy: Some("http://plain-proxy:80".into()),
            https_proxy: Some(https.into()),
            no_proxy: (!no_proxy.is_empty()).then(|| no_proxy.into()),
        }
    }

    fn via(env: &ProxyEnv, server: &str) -> Option<String> {
        env.proxy_for(&server.parse().unwrap())
            .unwrap()
            .map(|u| u.to_string())
    }

    #[test]
    fn a_value_without_a_scheme_is_http_and_keeps_its_credentials() {
        let e = env("alice:pw@proxy:3128", "");
        assert_eq!(
            via(&e, "https://api.prod.example:6443").as_deref(),
            Some("http://alice:pw@proxy:3128/")
        );
        assert_eq!(
            via(&env("proxy.corp:3128", ""), "https://api.example").as_deref(),
            Some("http://proxy.corp:3128/")
        );
        assert_eq!(
            via(&env("socks5://p:1080", ""), "https://api.example").as_deref(),
            Some("socks5://p:1080/")
        );
        assert_eq!(
            via(&e, "http://api.example:8080").as_deref(),
            Some("http://plain-proxy:80/"),
            "HTTP_PROXY for an http server"
        );
    }

    #[test]
    fn loopback_and_localhost_are_never_proxied() {
        let e = env("http://proxy:3128", "");
        for server in [
            "https://127.0.0.1:6443",
            "https://127.0.0.2:6443",
            "https://[::1]:6443",
            "https://localhost:6443",
        ] {
            assert_eq!(via(&e, server), None, "{server}");
        }
    }

    #[test]
    fn no_proxy_is_judged_against_the_server_as_go_does() {
        let e = env(
            "http://proxy:3128",
            " ,Corp.Example, .svc.local,*.wild.example,10.0.0.0/8,fd00::/8,192.0.2.7,[2001:db8::1]:6443,pinned.example:8443,,",
        );
        let direct = [
            "https://corp.example",
            "https://k8s.corp.example:6443",
            "https://api.svc.local",
            "https://a.wild.example",
            "https://10.1.2.3:6443",
            "https://[fd00::12]:6443",
            "https://192.0.2.7:6443",
            "https://[2001:db8::1]:6443",
            "https://pinned.example:8443",
        ];
        for server in direct {
            assert_eq!(via(&e, server), None, "{server} is excluded");
        }
        let proxied = [
            "https://notcorp.example",
            "https://svc.local",
            "https://wild.example",
            "https://11.1.2.3",
            "https://[fe80::1]:6443",
            "https://[2001:db8::1]:443",
            "https://pinned.example:6443",
            "https://192.0.2.8",
        ];
        for server in proxied {
            assert!(via(&e, server).is_some(), "{server} goes through the proxy");
        }
        assert_eq!(via(&env("http://p:1", "*"), "https://x.example"), None);
        assert_eq!(
            via(&env("http://p:1", ",, ,"), "https://x.example").as_deref(),
            Some("http://p:1/"),
            "only empty entries exclude nothing"
        );
    }

    #[test]
    fn credentials_are_found_with_or_without_a_scheme_and_taken_out() {
        let found = credentials("alice:p%40ss@proxy:3128");
        for secret in ["alice:p%40ss", "p%40ss", "p@ss"] {
            assert!(found.contains(&secret.to_string()), "{found:?}");
        }
        assert!(credentials("http://a:b@proxy:1/path").contains(&"b".to_string()));
        assert!(credentials("http://proxy:1").is_empty());
        assert_eq!(
            without_userinfo("alice:pw@proxy:3128"),
            "[redacted]@proxy:3128"
        );
        assert_eq!(
            without_userinfo("http://alice:pw@proxy:3128/x"),
            "http://[redacted]@proxy:3128/x"
        );
        let err = parse_proxy("alice:pw@proxy host:3128").unwrap_err();
        assert!(!err.to_string().contains("pw"), "{err}");
    }
}
