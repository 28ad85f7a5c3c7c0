"""What the benchmarks and experiment reports say about the machine they ran on."""
import platform


def cpu_model():
    """The CPU's model name, family and model number (/proc/cpuinfo): the
    name alone ("AMD EPYC") does not tell the generations apart."""
    try:
        with open("/proc/cpuinfo") as f:
            first = f.read().split("\n\n")[0]
        info = {k.strip(): v.strip() for k, v in (l.split(":", 1) for l in first.splitlines() if ":" in l)}
        return "%s (family %s, model %s)" % (info["model name"], info.get("cpu family", "?"),
                                             info.get("model", "?"))
    except (OSError, KeyError):
        return platform.processor() or platform.machine()
