"""lib_mask.py - masks the figures of hetsim's output that depend on the
machine, for the scripts that compare outputs (readme_outputs.sh,
results.sh; both reach it through scripts/lib_mask.sh).

mask_search_column(lines) -> lines: the "search s" column of `hetsim
compare`'s table (the planners' wall time) replaced by '*' and runs of
spaces squeezed (column widths follow the figure). A table starts at a
header line containing "search s" and ends at a blank line, a line starting
with ' ' or '(' or a line with ':' in its first 20 characters (the notes
under the table). Lines outside a table come back unchanged, so masking the
README's shown output and a fresh run gives equal text exactly when they
differ only in search times. Pure: the same lines give the same result.

Run as a filter (python3 scripts/lib_mask.py < in > out) it masks stdin.
"""
import re
import sys


def mask_search_column(lines):
    out, end = [], None
    for line in lines:
        k = line.find("search s")
        if k >= 0:
            end = k + len("search s")
        elif end is not None and (not line.strip() or line[0] in " (" or ":" in line[:20]):
            end = None
        elif end is not None and len(line) >= end:
            a = line.rfind(" ", 0, end) + 1
            b = line.find(" ", end - 1)
            b = len(line) if b < 0 else b
            line = re.sub(r" +", " ", line[:a] + "*" + line[b:])  # widths vary with the figure
        out.append(line)
    return out


if __name__ == "__main__":
    sys.stdout.write("\n".join(mask_search_column(sys.stdin.read().split("\n"))))
