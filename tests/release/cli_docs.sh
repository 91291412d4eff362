#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The completion scripts and man pages that `gpuq completion SHELL` and `gpuq manpages --dir`
# make from the command line's own definitions: each shell completes commands, subcommands and
# options from what it sources, and every page reads cleanly through groff's man macros with
# all warnings on. Usage: cli_docs.sh GPUQ SHELL|manpages. Exit 77 (skipped) when the shell or
# groff is not installed (scripts/install-deps.sh installs them).
set -euo pipefail
gpuq="$1"
what="$2"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
need() {
  command -v "$1" >/dev/null || { echo "skipped: $1 is not installed" >&2; exit 77; }
}
# expect NAME GOT WORD...: each WORD is a line of GOT.
expect() {
  local name="$1" got="$2"
  shift 2
  for word in "$@"; do
    grep -qxF -- "$word" <<<"$got" || fail "$name: '$word' is not offered; got: $(tr '\n' ' ' <<<"$got")"
  done
}
# refuse NAME GOT WORD...: no WORD is a line of GOT.
refuse() {
  local name="$1" got="$2"
  shift 2
  for word in "$@"; do
    if grep -qxF -- "$word" <<<"$got"; then fail "$name: '$word' is offered"; fi
  done
}

case "$what" in
  bash)
    "$gpuq" completion bash >"$work/gpuq.bash"
    # COMP_WORDS as bash fills them for the line typed so far; prints the offers.
    offers() {
      bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _gpuq; printf "%s\n" "${COMPREPLY[@]}"' \
        _ "$work/gpuq.bash" "$@"
    }
    got=$(offers gpuq "")
    expect "gpuq <TAB>" "$got" submit status show logs wait cancel fleet service completion
    refuse "gpuq <TAB>" "$got" shim manpages
    expect "gpuq su<TAB>" "$(offers gpuq su)" submit
    refuse "gpuq su<TAB>" "$(offers gpuq su)" status
    expect "gpuq fleet <TAB>" "$(offers gpuq fleet "")" submit status
    expect "gpuq service <TAB>" "$(offers gpuq service "")" install uninstall
    expect "gpuq submit --gp<TAB>" "$(offers gpuq submit --gp)" --gpus --gpu-mem
    expect "gpuq --home x status --j<TAB>" "$(offers gpuq --home x status --j)" --json
    expect "gpuq service install --<TAB>" "$(offers gpuq service install --)" --run-as --print --user
    # After an option that takes a value, files: not the command's options.
    touch "$work/plan.toml"
    got=$(cd "$work" && offers gpuq submit --gpus "")
    expect "gpuq submit --gpus <TAB>" "$got" plan.toml
    ;;
  zsh)
    need zsh
    "$gpuq" completion zsh >"$work/_gpuq"
    head -1 "$work/_gpuq" | grep -qx '#compdef gpuq' || fail "zsh: the first line is not #compdef gpuq"
    zsh -n "$work/_gpuq" || fail "zsh: the script does not parse"
    # The completion system's functions, stood in for: print what would be offered. In a
    # plain zsh `words` and `CURRENT` are ordinary variables, set as the system would.
    offers() {
      zsh -fc '
        _describe() { local name=${@[-1]}; local item; for item in ${(P)name}; do print -r -- ${item%%:*}; done }
        _files() { print -r -- "(files)" }
        compdef() { [[ $1 == _gpuq && $2 == gpuq ]] || print -r -- "compdef $*" }
        source "$1"; shift
        words=("$@"); CURRENT=$#
        _gpuq' _ "$work/_gpuq" "$@"
    }
    got=$(offers gpuq "")
    expect "gpuq <TAB>" "$got" submit status fleet completion
    refuse "gpuq <TAB>" "$got" shim manpages
    expect "gpuq fleet <TAB>" "$(offers gpuq fleet "")" submit status
    refuse "gpuq fleet <TAB>" "$(offers gpuq fleet "")" daemon completion
    expect "gpuq submit --<TAB>" "$(offers gpuq submit --)" --gpus --gpu-mem --after
    expect "gpuq submit --gpus <TAB>" "$(offers gpuq submit --gpus "")" "(files)"
    ;;
  fish)
    need fish
    "$gpuq" completion fish >"$work/gpuq.fish"
    fish --no-execute "$work/gpuq.fish" || fail "fish: the script does not parse"
    offers() { fish --no-config -c "source $work/gpuq.fish; complete -C '$1'" | cut -f1; }
    got=$(offers "gpuq ")
    expect "gpuq <TAB>" "$got" submit status fleet completion
    refuse "gpuq <TAB>" "$got" shim manpages
    expect "gpuq fleet <TAB>" "$(offers "gpuq fleet ")" submit status
    expect "gpuq submit --gp<TAB>" "$(offers "gpuq submit --gp")" --gpus --gpu-mem
    refuse "gpuq submit --gp<TAB>" "$(offers "gpuq submit --gp")" --json-each
    ;;
  manpages)
    need groff
    "$gpuq" manpages --dir "$work/man" >"$work/written"
    [ "$(wc -l <"$work/written")" -eq "$(ls "$work/man" | wc -l)" ] || fail "manpages: it printed $(wc -l <"$work/written") paths for $(ls "$work/man" | wc -l) files"
    for page in gpuq.1 gpuq-submit.1 gpuq-status.1 gpuq-fleet.1 gpuq-fleet-submit.1 \
                gpuq-service-install.1 gpuq-completion.1; do
      [ -s "$work/man/$page" ] || fail "manpages: no $page"
    done
    for hidden in gpuq-shim.1 gpuq-manpages.1; do
      [ ! -e "$work/man/$hidden" ] || fail "manpages: $hidden is written, though hidden from help"
    done
    # Every command `gpuq --help` lists has its page.
    "$gpuq" --help | awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1}' >"$work/commands"
    [ -s "$work/commands" ] || fail "manpages: no command read from gpuq --help"
    while read -r command; do
      [ -s "$work/man/gpuq-$command.1" ] || fail "manpages: no page for gpuq $command"
    done <"$work/commands"
    for page in "$work"/man/*.1; do
      warnings=$(groff -man -ww -z "$page" 2>&1)
      [ -z "$warnings" ] || fail "manpages: groff warns about $(basename "$page"): $warnings"
    done
    text=$(groff -man -Tutf8 -P -cbou "$work/man/gpuq-submit.1" 2>/dev/null)
    grep -q -- "--gpus" <<<"$text" || fail "manpages: gpuq-submit.1 does not show --gpus"
    grep -q "gpuq 0\.\|gpuq [0-9]" <<<"$text" || fail "manpages: gpuq-submit.1 does not say which gpuq"
    ;;
  *)
    fail "unknown check '$what': give bash, zsh, fish or manpages"
    ;;
esac
# A shell gpuq does not know is a usage error that names the three it does.
if [ "$what" = bash ]; then
  set +e
  err=$("$gpuq" completion powershell 2>&1 >/dev/null)
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "completion powershell: exit $rc, not 2"
  grep -q "bash, zsh or fish" <<<"$err" || fail "completion powershell: the message names no shells: $err"
fi
echo "ok: $what"
