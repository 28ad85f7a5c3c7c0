"""Joins rewire-bench.txt and torch-bench.txt into a Markdown table:
per fused kernel its time, achieved bandwidth, fraction of the measured
device-to-device copy bandwidth, and PyTorch eager / torch.compile times."""
import re
import sys

res = sys.argv[1]
ours = {}
for line in open(res + "/rewire-bench.txt"):
    m = re.match(r"rewire (\w+): profile: (\S+)\s+([\d.]+) ms\s+([\d.]+) MB\s+([\d.]+) GB/s", line)
    if m:
        ours.setdefault(m.group(1), []).append((m.group(2), float(m.group(3)), float(m.group(4)),
                                                float(m.group(5))))
copy, torch = None, {}
for line in open(res + "/torch-bench.txt"):
    if line.startswith("copy "):
        copy = float(line.split()[1])
    m = re.match(r"torch (\w+) eager ([\d.na]+) compiled ([\d.na]+) bytes (\d+)", line)
    if m:
        torch[m.group(1)] = (float(m.group(2)), float(m.group(3)), int(m.group(4)))
print("| kernel | Rewire ms | GB/s | %% of copy (%s GB/s) | PyTorch eager ms | torch.compile ms "
      "| torch.compile / Rewire |" % ("%.0f" % copy if copy else "?"))
print("|---|---|---|---|---|---|---|")
for name, steps in ours.items():
    # The fused kernel is the step with the most traffic.
    kernel, ms, mb, gbs = max(steps, key=lambda s: s[2])
    total = sum(s[1] for s in steps)
    e, c, _ = torch.get(name, (float("nan"),) * 3)
    print("| %s (%s, %d steps) | %.3f | %.0f | %.0f%% | %.3f | %.3f | %.2fx |"
          % (name, kernel, len(steps), total, gbs, 100 * gbs / copy if copy else float("nan"), e, c,
             c / total if total else float("nan")))
