#!/usr/bin/env bash
# readme_outputs.sh - run every command in README.md's ```sh blocks and
# check (default) or rewrite (--update) the outputs the README shows.
#
#   bash scripts/readme_outputs.sh [--update] [--bin PATH] [--readme FILE] [--save DIR]
#
# --save DIR keeps each command's standard output as DIR/N.out and the
# command as DIR/N.cmd (N = 1, 2, ... in README order), for checks that
# parse them (tests/cli/readme_examples.sh) without running them again.
#
# The README's convention:
#   - a ```sh block holds commands, one per line (a trailing backslash
#     continues it; `# ...` comments are bash's);
#   - a ```text block right after a ```sh block (blank lines between) is the
#     standard output of that block's commands, in order; --update rewrites
#     it from a fresh run;
#   - `build/hetsim` runs as --bin (default $HETSIM_BIN, else build/hetsim),
#     in the source tree's root;
#   - commands that are not `build/hetsim ...` are run elsewhere, each named
#     in SKIP below with the place that runs it; any other command fails the
#     check, so a new kind of command cannot go unrun.
# Figures that depend on the machine (the "search s" column of compare's
# table: the planners' wall time) are masked on both sides before comparing
# (scripts/lib_mask.py, as results.sh --check does).
# --update also redraws docs/img/timeline-hetero-1f1b.svg, the README's picture.
# Exit: 0 every command ran and matched (or was rewritten), 1 otherwise,
# 2 bad usage.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
update=0
bin=${HETSIM_BIN:-$root/build/hetsim}
readme=$root/README.md
save=
while [ $# -gt 0 ]; do
  case $1 in
    --update) update=1 ;;
    --bin) bin=$2; shift ;;
    --readme) readme=$2; shift ;;
    --save) save=$2; shift ;;
    *) echo "readme_outputs: unknown argument '$1' (use --update, --bin PATH, --readme FILE, --save DIR)" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$bin" ] || { echo "readme_outputs: no hetsim binary at $bin (build it, or --bin PATH)" >&2; exit 2; }
cd "$root"
# --update also redraws the README's picture (a device timeline of a
# heterogeneous hetero-1f1b plan, hetsim export --svg)
if [ $update -eq 1 ]; then
  t=$(mktemp -d)
  "$bin" simulate --model gpt3-1.3b --cluster a100-v100-two-sites --tp 2 --pp 4 --dp 2 \
    --microbatch-size 2 --global-batch 32 --schedule hetero-1f1b --trace "$t/trace.json" >/dev/null
  "$bin" export "$t/trace.json" --svg docs/img/timeline-hetero-1f1b.svg >/dev/null
  rm -rf "$t"
fi
# shellcheck source=scripts/lib_mask.sh
. "$root/scripts/lib_mask.sh"
PYTHONPATH=$hs_mask_pythonpath exec python3 - "$readme" "$bin" "$update" "$save" <<'PY'
import os, re, subprocess, sys
from lib_mask import mask_search_column  # scripts/lib_mask.py

readme, binary, update, save = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4]
# Commands run by another check, with the check that runs them.
SKIP = {
    "bash scripts/quickstart.sh": "its job is `build/hetsim compare --scenario hapt`, run here",
    "bash scripts/test.sh": ".ci/run runs it first",
    "python3 -m venv ": "scripts/test_python.sh runs this line in a fresh venv",
    ".venv/bin/python -m ipykernel install ": "scripts/test_python.sh runs it, then the notebook under the kernel",
    "bash scripts/results.sh": ".ci/run runs it with --reduced --check docs/results.md",
    "bash scripts/readme_outputs.sh": "ctest cli_readme_examples runs it",
}

def blocks(lines):
    """(kind, first body line index, end index) of every fenced block."""
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if m:
            j = i + 1
            while j < len(lines) and lines[j].rstrip() != "```":
                j += 1
            if j == len(lines):
                sys.exit(f"readme_outputs: {readme}:{i + 1}: a ``` block is not closed")
            out.append((m.group(1), i + 1, j))
            i = j + 1
        else:
            i += 1
    return out

def commands(body):
    cmds, cur = [], ""
    for line in body:
        cur += line.rstrip("\n")
        if cur.endswith("\\"):
            cur = cur[:-1] + " "
            continue
        if cur.strip() and not cur.lstrip().startswith("#"):
            cmds.append(cur.strip())
        cur = ""
    return cmds

def mask(text):
    """The planners' wall time (compare's "search s" column) as '*'."""
    return "\n".join(mask_search_column(text.split("\n")))

lines = open(readme).read().split("\n")
bl = blocks(lines)
fail, ran, checked, edits = 0, 0, 0, []
for n, (kind, a, b) in enumerate(bl):
    if kind != "sh":
        continue
    output = ""
    for cmd in commands(lines[a:b]):
        skip = next((why for pre, why in SKIP.items() if cmd.startswith(pre)), None)
        if skip:
            print(f"readme_outputs: line {a}: not run here ({skip}): {cmd}")
            continue
        if not cmd.startswith("build/hetsim "):
            print(f"readme_outputs: {readme}:{a}: no rule to run '{cmd}' (a build/hetsim command, or one in SKIP)",
                  file=sys.stderr)
            fail = 1
            continue
        run = binary + cmd[len("build/hetsim"):]
        p = subprocess.run(["bash", "-o", "pipefail", "-c", run], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        ran += 1
        if save:
            open(os.path.join(save, f"{ran}.cmd"), "w").write(cmd + "\n")
            open(os.path.join(save, f"{ran}.out"), "w").write(p.stdout)
        if p.returncode != 0:
            print(f"readme_outputs: {readme}:{a}: '{cmd}' exited {p.returncode}: {p.stderr.strip()[-2000:]}",
                  file=sys.stderr)
            fail = 1
        output += p.stdout
    # the shown output: a ```text block right after this one
    nxt = bl[n + 1] if n + 1 < len(bl) else None
    if nxt and nxt[0] == "text" and all(not l.strip() for l in lines[b + 1:nxt[1] - 1]):
        shown = "\n".join(lines[nxt[1]:nxt[2]])
        got = output.rstrip("\n")
        if update:
            edits.append((nxt[1], nxt[2], got.split("\n") if got else []))
        elif mask(shown) != mask(got):
            fail = 1
            print(f"readme_outputs: {readme}:{nxt[1]}: the shown output differs from a fresh run "
                  "(bash scripts/readme_outputs.sh --update rewrites it):", file=sys.stderr)
            import difflib
            sys.stderr.writelines(difflib.unified_diff(
                (mask(shown) + "\n").splitlines(True), (mask(got) + "\n").splitlines(True),
                "README.md (shown)", "fresh run", n=1))
        else:
            checked += 1
for a, b, new in sorted(edits, reverse=True):
    lines[a:b] = new
if update and edits and not fail:
    open(readme, "w").write("\n".join(lines))
    print(f"readme_outputs: rewrote {len(edits)} output blocks of {readme}")
print(f"readme_outputs: {ran} commands run, {checked} shown outputs match" + (", FAILED" if fail else ""))
sys.exit(fail)
PY
