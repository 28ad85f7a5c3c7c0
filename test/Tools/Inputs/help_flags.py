"""Every flag a tool's --help lists is one its parser takes (and the other way
round is true by construction: both come from one FlagParser table): each
listed --flag, given with a value if it shows one, must not be refused as
unknown.

    help_flags.py TOOL...
"""
import re
import subprocess
import sys

bad = 0
for tool in sys.argv[1:]:
    text = subprocess.run([tool, "--help"], capture_output=True, text=True).stdout
    flags = re.findall(r"^  --([a-z0-9_-]+)(=\S*)?", text, re.M)
    for name, value in flags:
        if name == "help":
            continue
        arg = "--%s%s" % (name, "=1" if value else "")
        r = subprocess.run([tool, arg, "--no-such-flag-xyz"], capture_output=True, text=True)
        if "unknown option '%s" % arg.split("=")[0] in r.stderr:
            print("FAIL %s: --help lists %s but the parser refuses it" % (tool, arg))
            bad += 1
    print("%s: %d flags listed, all parsed" % (tool.split("/")[-1], len(flags)))
sys.exit(1 if bad else 0)
