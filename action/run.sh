#!/usr/bin/env bash
# The GitHub Action's step (action.yml): install the affinity-lint release binary for this
# runner, lint the given files to a SARIF report, and print GitHub annotations. Runs
# anywhere with bash, curl (or a local archive) and tar:
#
#   AFFINITY_LINT_VERSION=v0.1.0 AFFINITY_LINT_FILES=deploy/ AFFINITY_LINT_SARIF=out.sarif action/run.sh
#
# AFFINITY_LINT_ARCHIVE, when set, is a local release archive used instead of downloading
# (how the test runs it); AFFINITY_LINT_SHA256SUMS a local SHA256SUMS to check it against.
# A downloaded archive is always checked against the release's SHA256SUMS before anything
# in it runs, and against its signed build provenance where gh and GH_TOKEN are at hand. Exit: affinity-lint's (0 clean, 1 findings, 2 input errors or a bad archive).
set -euo pipefail

version="${AFFINITY_LINT_VERSION:-v0.1.0}"
files="${AFFINITY_LINT_FILES:-.}"
fail_on="${AFFINITY_LINT_FAIL_ON:-error}"
sarif="${AFFINITY_LINT_SARIF:-affinity-lint.sarif}"

# A report code scanning accepts even when nothing could be linted.
empty_sarif() {
  echo '{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"affinity-lint"}},"results":[]}]}' > "$sarif"
}
# Written first, replaced by the real report: whatever fails below (an unknown platform, the
# download), the upload step finds a valid file and the log shows the real error.
empty_sarif
case "$fail_on" in
  error | warning | info) ;;
  *)
    # The value itself is not echoed: it could carry workflow commands.
    echo "::error title=affinity-lint::the fail-on input must be error, warning or info"
    exit 2
    ;;
esac

case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) echo "affinity-lint: no release for $(uname -s)" >&2; exit 2 ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "affinity-lint: no release for $(uname -m)" >&2; exit 2 ;;
esac

install_dir="$(mktemp -d)"
trap 'rm -rf "$install_dir"' EXIT
archive="${AFFINITY_LINT_ARCHIVE:-}"
sums="${AFFINITY_LINT_SHA256SUMS:-}"
name="affinity-lint_${version}_${os}_${arch}.tar.gz"
if [ -z "$archive" ]; then
  archive="$install_dir/$name"
  release="https://github.com/placekit/placekit/releases/download/${version}"
  curl --fail --silent --show-error --location --retry 3 --output "$archive" "$release/$name"
  sums="$install_dir/SHA256SUMS"
  curl --fail --silent --show-error --location --retry 3 --output "$sums" "$release/SHA256SUMS"
else
  name="$(basename "$archive")"
fi
# The archive's checksum, as the release published it, before anything in it runs.
if [ -n "$sums" ]; then
  expected="$(awk -v n="$name" '$2 == n || $2 == "*" n { print $1; exit }' "$sums")"
  if command -v sha256sum >/dev/null 2>&1; then
    actual="$(sha256sum "$archive" | awk '{ print $1 }')"
  else
    actual="$(shasum -a 256 "$archive" | awk '{ print $1 }')"
  fi
  if [ -z "$expected" ]; then
    echo "::error title=affinity-lint::$name is not in the release's SHA256SUMS: not run"
    exit 2
  fi
  if [ "$expected" != "$actual" ]; then
    echo "::error title=affinity-lint::$name does not match the release's SHA256SUMS (expected $expected, got $actual): not run"
    exit 2
  fi
fi
# The archive's signed build provenance (a GitHub artifact attestation the release workflow
# makes), when it was downloaded and gh and a token are at hand (GitHub's runners have gh;
# the Action passes the workflow's token): made by placekit's release workflow from
# placekit/placekit, or not run.
if [ -z "${AFFINITY_LINT_ARCHIVE:-}" ]; then
  if command -v gh >/dev/null 2>&1 && [ -n "${GH_TOKEN:-}" ]; then
    if ! gh attestation verify "$archive" --repo placekit/placekit >/dev/null; then
      echo "::error title=affinity-lint::$name has no valid build provenance from placekit/placekit's release workflow: not run"
      exit 2
    fi
  else
    # Said, never silent: the checksum above still holds, the provenance is not checked.
    echo "::warning title=affinity-lint::the build provenance of $name was not checked (gh or GH_TOKEN is missing on this runner); its SHA256SUMS entry was"
  fi
fi
tar -xzf "$archive" -C "$install_dir" kubectl-affinity_lint
bin="$install_dir/kubectl-affinity_lint"

# Several paths: one per line when the list has several lines (so a path may hold
# spaces), else separated by spaces; globs are expanded either way. In directories, the
# YAML and JSON files outside Helm charts' templates/ (not YAML until rendered) and .git.
if [[ "$files" == *$'\n'* ]]; then
  IFS=$'\n'
fi
# shellcheck disable=SC2086
set -- $files
unset IFS
args=()
for path in "$@"; do
  # A path starting with - would be read as an option by find and the linter.
  case "$path" in -*) path="./$path" ;; esac
  if [ -d "$path" ]; then
    while IFS= read -r -d '' file; do
      args+=(-f "${file#./}")
    done < <(find "$path" -type f \( -name '*.yaml' -o -name '*.yml' -o -name '*.json' \) \
      -not -path '*/templates/*' -not -path '*/.git/*' -print0 | sort -z)
  else
    args+=(-f "$path")
  fi
done
if [ "${#args[@]}" -eq 0 ]; then
  echo "affinity-lint: no YAML or JSON files in: $files" >&2
  empty_sarif
  exit 0
fi

status=0
"$bin" "${args[@]}" -o sarif --fail-on "$fail_on" > "$sarif" || status=$?
# A usage error prints no report: leave code scanning a valid, empty one.
[ -s "$sarif" ] || empty_sarif
# The same findings as annotations on the pull request's files.
"$bin" "${args[@]}" -o github --fail-on "$fail_on" || true
exit "$status"
