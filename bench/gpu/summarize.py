"""Joins rewire-bench.txt and torch-bench.txt into a Markdown table:
per fused kernel its time, achieved bandwidth, fraction of the measured
device-to-device copy bandwidth, and PyTorch eager / torch.compile times;
then train-bench.txt's training step as a second table."""
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

# The training step.
train = {}
try:
    for line in open(res + "/train-bench.txt"):
        parts = line.split()
        if line.startswith("train model "):
            train["model"] = parts[2]
        elif line.startswith("train rewire ") and len(parts) == 3:
            train["rewire"] = float(parts[2])
        elif line.startswith("train rewire-") and len(parts) == 3:
            train.setdefault("forms", []).append((parts[1][len("rewire-"):], float(parts[2])))
        # (a failed side prints "train torch eager failed: ..." to stderr first)
        elif re.match(r"train torch eager \S+ compiled \S+$", line.strip()):
            train["eager"], train["compiled"] = float(parts[3]), float(parts[5])
except FileNotFoundError:
    pass
if train:
    nan = float("nan")
    r, e, c = train.get("rewire", nan), train.get("eager", nan), train.get("compiled", nan)
    print()
    print("| training step (GPT %s: layers,d,heads,T,B,V) | Rewire ms | PyTorch eager ms | "
          "torch.compile ms | eager / Rewire | torch.compile / Rewire |" % train.get("model", "?"))
    print("|---|---|---|---|---|---|")
    print("| AdamW step, cross-entropy | %.3f | %.3f | %.3f | %.2fx | %.2fx |"
          % (r, e, c, e / r if r else nan, c / r if r else nan))
    if train.get("forms"):
        print()
        print("| form (same step) | Rewire ms | overhead over the plain step |")
        print("|---|---|---|")
        for form, ms in train["forms"]:
            print("| %s | %.3f | %+.1f%% |" % (form, ms, 100 * (ms / r - 1) if r else nan))
