//! The `kubectl <plugin> …` form of the shell scripts `completion bash|zsh|fish` print.
//!
//! clap's scripts complete the binary (`kubectl-nodelabel <TAB>`). Users type `kubectl
//! nodelabel <TAB>`, and a shell hands that line to whatever completes `kubectl`. So each
//! script also registers a completion for `kubectl` that works like this:
//! - It answers a line whose first word after `kubectl` is the plugin's name. The words
//!   after the name go to the plugin's own `__complete`, in the protocol kubectl's
//!   `kubectl_complete-<plugin>` helper speaks: candidates, then `:<directive>`.
//! - It hands every other line to the completion `kubectl` had before. So kubectl's own
//!   completion, loaded first, keeps working, and so do the other placekit plugins' scripts,
//!   each chaining to the one before.
//!
//! fish adds rules instead of replacing them, so its script only adds the plugin's rule.

use super::CompletionTarget;

/// The script that completes `kubectl <plugin> …` in `shell` through `binary __complete`;
/// empty for shells without one.
pub fn script(shell: CompletionTarget, plugin: &str, binary: &str) -> String {
    // Shell identifiers: the plugin's name with its dashes as underscores.
    let id = plugin.replace('-', "_");
    let template = match shell {
        CompletionTarget::Bash => BASH,
        CompletionTarget::Zsh => ZSH,
        CompletionTarget::Fish => FISH,
        _ => return String::new(),
    };
    template
        .replace("@ID@", &id)
        .replace("@PLUGIN@", plugin)
        .replace("@BINARY@", binary)
}

/// bash: words come from `COMP_LINE` up to the cursor, split at blanks. bash's own
/// `COMP_WORDS` also split at `=` and `:`, so the candidates lose the part of the word bash
/// does not replace (`key=` completes to `key=value`). The earlier `-F` function of `kubectl`
/// answers every other line.
const BASH: &str = r#"
# `kubectl @PLUGIN@ <TAB>`: the words after the plugin's name are completed by
# `@BINARY@ __complete`; any other kubectl command line goes to the completion kubectl had
# before this script (source kubectl's own completion first).
# Sourced again (a new shell config, another plugin's script in between), it keeps the
# completion it found the first time: chaining to a later one could loop.
if [[ -z "${__placekit_kubectl_@ID@_previous+set}" ]]; then
    __placekit_kubectl_@ID@_previous="$(complete -p kubectl 2>/dev/null | sed -n 's/.* -F \([^ ]*\) .*/\1/p')"
fi
__placekit_kubectl_@ID@() {
    local line="${COMP_LINE:0:COMP_POINT}"
    local -a words
    read -r -a words <<< "$line"
    [[ "$line" =~ [[:space:]]$ ]] && words+=("")
    if [[ ${#words[@]} -lt 3 || "${words[1]}" != "@PLUGIN@" ]]; then
        if [[ -n "$__placekit_kubectl_@ID@_previous" && "$__placekit_kubectl_@ID@_previous" != "__placekit_kubectl_@ID@" ]] \
            && declare -F "$__placekit_kubectl_@ID@_previous" >/dev/null; then
            "$__placekit_kubectl_@ID@_previous" "$@"
        fi
        return
    fi
    local cur="${words[${#words[@]}-1]}" out directive candidate
    out="$(@BINARY@ __complete "${words[@]:2}" 2>/dev/null)" || return 0
    directive="${out##*:}"
    [[ "$directive" =~ ^[0-9]+$ ]] || directive=0
    local prefix="${cur%"${COMP_WORDS[COMP_CWORD]}"}"
    COMPREPLY=()
    while IFS= read -r candidate; do
        [[ -z "$candidate" || "$candidate" == :* ]] && continue
        candidate="${candidate%%$'\t'*}"
        [[ "$candidate" == "$cur"* ]] || continue
        COMPREPLY+=("${candidate#"$prefix"}")
    done <<< "$out"
    if (( directive & 2 )); then compopt -o nospace 2>/dev/null; fi
    if (( ${#COMPREPLY[@]} == 0 && !(directive & 4) )); then compopt -o default 2>/dev/null; fi
    return 0
}
complete -F __placekit_kubectl_@ID@ kubectl
"#;

/// zsh: `words` and `CURRENT` as the completion system sets them; the earlier completion
/// of `kubectl` (`$_comps[kubectl]`) answers every other line.
const ZSH: &str = r#"
# `kubectl @PLUGIN@ <TAB>`: the words after the plugin's name are completed by
# `@BINARY@ __complete`; any other kubectl command line goes to the completion kubectl had
# before this script (source kubectl's own completion first).
# Sourced again, it keeps the completion it found the first time: chaining to a later one
# could loop.
(( ${+__placekit_kubectl_@ID@_previous} )) || typeset -g __placekit_kubectl_@ID@_previous="${_comps[kubectl]:-}"
__placekit_kubectl_@ID@() {
    if (( CURRENT > 2 )) && [[ "${words[2]}" == "@PLUGIN@" ]]; then
        local out directive line
        local -a lines candidates
        out="$(@BINARY@ __complete "${(@)words[3,CURRENT]}" 2>/dev/null)" || return 1
        lines=("${(@f)out}")
        directive="${${lines[-1]}#:}"
        [[ "$directive" == <-> ]] || directive=0
        for line in "${(@)lines[1,-2]}"; do
            [[ -n "$line" ]] && candidates+=("${line%%$'\t'*}")
        done
        if (( ${#candidates} )); then
            if (( directive & 2 )); then
                compadd -Q -S '' -- "${(@)candidates}"
            else
                compadd -Q -- "${(@)candidates}"
            fi
        elif (( !(directive & 4) )); then
            _files
        fi
    elif [[ -n "$__placekit_kubectl_@ID@_previous" && "$__placekit_kubectl_@ID@_previous" != __placekit_kubectl_@ID@ ]]; then
        "$__placekit_kubectl_@ID@_previous" "$@"
    fi
}
compdef __placekit_kubectl_@ID@ kubectl
"#;

/// fish: a rule for `kubectl` that applies only after the plugin's name; fish keeps the
/// rules kubectl's own completion added.
const FISH: &str = r#"
# `kubectl @PLUGIN@ <TAB>`: the words after the plugin's name are completed by
# `@BINARY@ __complete`.
function __placekit_kubectl_@ID@_candidates
    set -l words (commandline -opc)
    set -e words[1..2]
    for line in (@BINARY@ __complete $words (commandline -ct) 2>/dev/null)
        string match -q -- ':*' $line; or echo $line
    end
end
complete -c kubectl -n 'set -l w (commandline -opc); test (count $w) -ge 2; and test "$w[2]" = @PLUGIN@' -f -a '(__placekit_kubectl_@ID@_candidates)'
"#;
