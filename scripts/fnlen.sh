#!/usr/bin/env bash
# The function-length rule (shared/STYLE.md, issue 37): no function in sim/,
# search/, elastic/, validate/ (with validate/cuda/) or cli/ longer than
# FNLEN_MAX lines (150).
#
#   bash scripts/fnlen.sh                 list every function over the limit
#                                         (file:line name length), always;
#                                         exit 1 if one of them is not in
#                                         scripts/fnlen-allow.txt
#   bash scripts/fnlen.sh --print-allow   print allow-list lines for the
#                                         current violations (to append to
#                                         scripts/fnlen-allow.txt at a merge)
#
# A function starts at the line ctags gives for its definition
# (`ctags -x --c-kinds=f`, universal or exuberant ctags) and ends at the
# first following line that is exactly "}" (house style: a function's
# closing brace alone in column 0); its length counts both lines. A
# definition whose first line opens and closes its body is one line long.
# scripts/fnlen-allow.txt holds one "file function reason" per line (file
# relative to the repository root, e.g. "sim/lower.c hs__lower split under
# way, issue 37"); '#' starts a comment. An allowed function is still
# listed, marked "(allowed)", so the list shows the debt; an allow line that
# matches no long function any more is reported as stale (not an error).
# Exit status: 0 all long functions allowed, 1 a long function not allowed,
# 2 bad usage or ctags missing. Deterministic: sorted by file, then line.
set -euo pipefail
cd "$(dirname "$0")/.."

max=${FNLEN_MAX:-150}
allow=scripts/fnlen-allow.txt
mode=check
case "${1:-}" in
  "") ;;
  --print-allow) mode=print ;;
  -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "fnlen.sh: unknown argument '$1' (use --print-allow or no argument)" >&2; exit 2 ;;
esac

if ! command -v ctags >/dev/null 2>&1; then
  echo "fnlen.sh: ctags not found: install universal-ctags (Debian: apt-get install universal-ctags; scripts/setup.sh does)" >&2
  exit 2
fi
if ! ctags --version 2>/dev/null | grep -qiE 'universal|exuberant'; then
  echo "fnlen.sh: '$(command -v ctags)' is not universal or exuberant ctags ($(ctags --version 2>&1 | head -n 1)); install universal-ctags" >&2
  exit 2
fi

dirs=()
for d in sim search elastic validate cli; do
  [ -d "$d" ] && dirs+=("$d")
done
mapfile -t files < <(find "${dirs[@]}" -name '*.c' -type f | LC_ALL=C sort)
[ ${#files[@]} -gt 0 ] || { echo "fnlen.sh: no C files under ${dirs[*]}" >&2; exit 2; }

# "file line name" per function definition, sorted by file then line
defs=$(ctags -x --c-kinds=f --language-force=C "${files[@]}" |
       awk '{ print $4, $3, $1 }' | LC_ALL=C sort -k1,1 -k2,2n)

# "file line name length" for every function over the limit: reads each
# file once, ends a function at the first line after its start that is "}"
long=$(printf '%s\n' "$defs" | awk -v max="$max" '
  function scan(f,   line, n) {
    delete close_at; delete one_line; nclose = 0; n = 0
    while ((getline line < f) > 0) {
      n++
      if (line == "}") close_at[++nclose] = n
      else if (line ~ /^[^ \t].*\{.*\}[ \t]*$/) one_line[n] = 1
    }
    close(f)
  }
  NF == 3 {
    if ($1 != cur) { cur = $1; scan(cur); k = 1 }
    start = $2 + 0
    if (start in one_line) next          # "f(...) { ...; }": one line
    while (k <= nclose && close_at[k] <= start) k++
    if (k > nclose) { printf "fnlen.sh: %s:%d %s: no closing \"}\" line after the start\n", $1, start, $3 > "/dev/stderr"; next }
    len = close_at[k] - start + 1
    if (len > max) print $1, start, $3, len
  }')

if [ "$mode" = print ]; then
  [ -z "$long" ] || printf '%s\n' "$long" |
    awk '{ printf "%s %s %d lines at %s, over the limit when the allow list was filled\n", $1, $3, $4, $2 }'
  exit 0
fi

# allowed "file function" keys, comments and blank lines dropped
allowed=""
[ -f "$allow" ] && allowed=$(sed -e 's/#.*//' "$allow" | awk 'NF >= 2 { print $1, $2 }')

echo "fnlen.sh: functions over $max lines in ${dirs[*]} (file:line name length):"
bad=0
if [ -n "$long" ]; then
  while read -r f line name len; do
    if printf '%s\n' "$allowed" | grep -qxF "$f $name"; then
      echo "  $f:$line $name $len (allowed)"
    else
      echo "  $f:$line $name $len NOT ALLOWED"
      bad=$((bad + 1))
    fi
  done <<<"$long"
fi
n_long=0
[ -z "$long" ] || n_long=$(printf '%s\n' "$long" | wc -l)
# allow lines whose function is no longer long: stale, worth deleting
if [ -n "$allowed" ]; then
  while read -r f name; do
    printf '%s\n' "$long" | awk -v f="$f" -v n="$name" '$1 == f && $3 == n { found = 1 } END { exit !found }' ||
      echo "  stale allow line (now within $max lines or gone): $f $name"
  done <<<"$allowed"
fi
echo "fnlen.sh: $n_long over the limit, $bad not in $allow"
if [ "$bad" -gt 0 ]; then
  echo "fnlen.sh: split the function(s) marked NOT ALLOWED into named steps (shared/STYLE.md), or add a line \"file function reason\" to $allow (bash scripts/fnlen.sh --print-allow prints them)" >&2
  exit 1
fi
