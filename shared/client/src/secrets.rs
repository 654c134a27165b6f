//! What must never be shown: the credentials of every kubeconfig user, cluster and proxy
//! this process connected with, noted by [`crate::connect`] before the first request, every
//! credential a request actually carried ([`LearnCredentials`]: the token an exec plugin or
//! an auth provider issued, a rotated token file's), and [`redact`], which takes them out of
//! any text (error messages, warnings) before it is printed. Apart from `connect` so the
//! output layer (the plugins' UI) can redact too without depending on the client.

/// What this process's kubeconfig user and cluster hold that must never be shown: the exec
/// credential plugin's arguments and environment values, the token, the password, the
/// client key (inline or the contents of its file), auth-provider settings and the
/// userinfo of the server URL. The exec plugin's command is kept to name it.
// No `Debug`: nothing may ever print these.
#[derive(Default)]
pub(crate) struct Secrets {
    pub(crate) exec_command: Option<String>,
    pub(crate) values: Vec<String>,
    /// The userinfo of proxy and server URLs, each with the `@` that ends it: taken out
    /// wherever a URL is quoted, however short (a two-letter password too).
    pub(crate) userinfos: Vec<String>,
}

/// Every secret of every context this process connected to (one, or several with
/// `--contexts`): a message about one cluster must not show another's credentials either.
static SECRETS: std::sync::RwLock<Secrets> = std::sync::RwLock::new(Secrets {
    exec_command: None,
    values: Vec::new(),
    userinfos: Vec::new(),
});

pub(crate) fn secrets() -> std::sync::RwLockReadGuard<'static, Secrets> {
    SECRETS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Every occurrence of a configured secret in `text` replaced by `[redacted]`.
pub fn redact(text: &str) -> String {
    let secrets = secrets();
    let text = secrets
        .userinfos
        .iter()
        .fold(text.to_string(), |t, userinfo| {
            t.replace(userinfo.as_str(), "[redacted]@")
        });
    secrets
        .values
        .iter()
        .filter(|v| v.len() >= 3)
        .fold(text, |t, secret| t.replace(secret.as_str(), "[redacted]"))
}

/// [`redact`] for bytes shown as they are (a hex dump of a binary answer): each secret's
/// bytes overwritten with `*`, the length kept so the dump's layout holds.
pub fn redact_bytes(bytes: &[u8]) -> Vec<u8> {
    let secrets = secrets();
    let mut out = bytes.to_vec();
    for secret in secrets
        .values
        .iter()
        .chain(&secrets.userinfos)
        .filter(|v| v.len() >= 3)
    {
        let needle = secret.as_bytes();
        let mut i = 0;
        while i + needle.len() <= out.len() {
            if &out[i..i + needle.len()] == needle {
                out[i..i + needle.len()].fill(b'*');
                i += needle.len();
            } else {
                i += 1;
            }
        }
    }
    out
}

/// Notes the credential in a request's `Authorization` header, however it was obtained:
/// kubeconfig values are known before the first request, but a token an exec plugin
/// returns, one an auth provider refreshes or a token file rotated under a running command
/// exists only in the header. Sits just inside the auth layer, so it sees what is sent.
///
/// Clone, as the auth layer of a refreshable token needs its inner service to be, over
/// kube's boxed stack, which is not: the stack is shared behind a lock held only to hand
/// it a request (its readiness is the HTTP client's, always ready), never while answered.
pub(crate) struct LearnCredentials<S> {
    inner: std::sync::Arc<tokio::sync::Mutex<S>>,
}

impl<S> LearnCredentials<S> {
    pub(crate) fn new(inner: S) -> Self {
        LearnCredentials {
            inner: std::sync::Arc::new(tokio::sync::Mutex::new(inner)),
        }
    }
}

impl<S> Clone for LearnCredentials<S> {
    fn clone(&self) -> Self {
        LearnCredentials {
            inner: self.inner.clone(),
        }
    }
}

impl<S, B> tower::Service<http::Request<B>> for LearnCredentials<S>
where
    S: tower::Service<http::Request<B>> + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = futures::future::BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        use tower::ServiceExt as _;
        if let Some(value) = request.headers().get(http::header::AUTHORIZATION) {
            learn_authorization(value.as_bytes());
        }
        let inner = self.inner.clone();
        Box::pin(async move {
            let answer = {
                let mut service = inner.lock().await;
                service.ready().await?.call(request)
            };
            answer.await
        })
    }
}

/// The secrets of one `Authorization` value (`Bearer TOKEN`, `Basic BASE64`), remembered
/// unless already known (a read lock per request; a write only for a new credential).
fn learn_authorization(value: &[u8]) {
    use base64::Engine as _;
    let value = String::from_utf8_lossy(value);
    let Some((scheme, credential)) = value.trim().split_once(' ') else {
        return;
    };
    let credential = credential.trim();
    let mut found = vec![credential.to_string()];
    if scheme.eq_ignore_ascii_case("basic")
        && let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(credential)
        && let Ok(decoded) = String::from_utf8(decoded)
        && let Some((_, password)) = decoded.split_once(':')
    {
        found.push(password.to_string());
    }
    found.retain(|secret| secret.len() >= 3);
    if found.is_empty() || found.iter().all(|s| secrets().values.contains(s)) {
        return;
    }
    remember(Secrets {
        values: found,
        ..Secrets::default()
    });
}

/// Adds what one context's configuration holds to what is taken out of every message.
pub(crate) fn remember(secrets: Secrets) {
    let mut all = SECRETS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if all.exec_command.is_none() {
        all.exec_command = secrets.exec_command;
    }
    all.values.extend(secrets.values);
    all.userinfos.extend(secrets.userinfos);
    // Longest first, so a secret containing another is blanked whole.
    all.values.sort_by_key(|s| std::cmp::Reverse(s.len()));
    all.values.dedup();
    all.userinfos.sort_by_key(|s| std::cmp::Reverse(s.len()));
    all.userinfos.dedup();
}
