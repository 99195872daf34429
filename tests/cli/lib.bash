# lib.bash - sourced by the tests/cli/*.sh scripts (not a test itself: ctest
# runs only *.sh). A scratch directory $tmp removed on exit, the pass/fail
# counters and the checks every script uses:
#   expect CODE CMD...   CMD exits with CODE (stdout in $tmp/out, stderr in $tmp/err)
#   has FILE TEXT        FILE contains TEXT;   hasnot FILE TEXT: it does not
#   ok / bad MSG         count a pass / a failure (bad prints MSG)
#   die MSG              a failure in the scripts that end with `exit $fail`
#                        (fail stays 0 or 1, a valid exit code)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok()   { pass=$((pass + 1)); }
bad()  { fail=$((fail + 1)); echo "FAIL: $*"; }
die()  { echo "FAIL: $*" >&2; fail=1; }
expect() {
  local code=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ "$rc" -eq "$code" ]; then ok; else bad "exit $rc (want $code): $*"; cat "$tmp/err"; fi
}
has()    { if grep -qF -- "$2" "$1"; then ok; else bad "'$2' not in $1: $(head -c 400 "$1")"; fi; }
hasnot() { if grep -qF -- "$2" "$1"; then bad "'$2' in $1"; else ok; fi; }
