# shellcheck shell=bash
# lib_mask.sh - sourced (not run) by the scripts that compare hetsim's
# outputs across runs or builds: the masks for the figures that depend on
# the machine, in one place.
#
#   hs_mask_times            filter stdin -> stdout: search and CPU times
#                            as "T" (JSON fields "search*"/"cpu*", CSV
#                            columns search_s/cpu_s, "search 1.23 s" in
#                            text); scripts/behaviour_diff.sh
#   hs_mask_pythonpath       a PYTHONPATH under which Python code can
#                            `from lib_mask import mask_search_column`
#                            (scripts/lib_mask.py: compare's "search s"
#                            table column as '*'); readme_outputs.sh and
#                            results.sh mask shown and fresh output with it
#   hs_mask_search_column    filter stdin -> stdout with that function
#
# Defines functions and variables only; changes no shell option.
hs_mask_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck disable=SC2034  # read by the scripts that source this file
hs_mask_pythonpath="$hs_mask_dir${PYTHONPATH:+:$PYTHONPATH}"

hs_mask_times() {
  sed -E \
    -e 's/("(search|cpu)[a-z_]*"[[:space:]]*:[[:space:]]*)[-0-9.e+]+/\1T/g' \
    -e 's/(search|searched|cpu)([^0-9]{0,12})[0-9]+\.[0-9]+ ?(s|CPU s)/\1\2T \3/g' |
  awk -F, -v OFS=, '
    NR == 1 { for (i = 1; i <= NF; i++) if ($i == "search_s" || $i == "cpu_s") m[i] = 1 }
    { if (NR > 1) for (i in m) $i = "T"; print }'
}

hs_mask_search_column() {
  python3 "$hs_mask_dir/lib_mask.py"
}
