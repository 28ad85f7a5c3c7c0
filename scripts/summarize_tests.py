"""Adds up a lit xunit report, the pytest JUnit reports of the Python
package's suites (each test case counted; the lit test that ran the suite
counts too) and NAME=pass|fail results of suites without one into the one
line CI reads: `N passed, N failed`.

    summarize_tests.py results.xml [pytest-model.xml ...] [fuzz-import=pass ...]

Unsupported tests (e.g. `REQUIRES: cuda-gpu` on a machine without a GPU) are
listed on the line before, never counted as passed. A missing or empty report
counts as a failure: a test run that ran nothing must not look green.
"""
import sys
import xml.etree.ElementTree as ET


def main(path, args):
    reports = [path] + [a for a in args if a.endswith(".xml")]
    extras = [a for a in args if not a.endswith(".xml")]
    passed = failed = skipped = 0
    for report in reports:
        try:
            root = ET.parse(report).getroot()
        except (OSError, ET.ParseError) as e:
            print("summarize_tests: cannot read %s: %s" % (report, e))
            failed += 1
            continue
        for case in root.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
                if report != path:
                    print("FAILED: %s::%s" % (case.get("classname"), case.get("name")))
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    # Suites that do not write xunit (the short fuzz run): NAME=pass|fail.
    for extra in extras:
        name, _, result = extra.partition("=")
        if result == "pass":
            passed += 1
        else:
            failed += 1
            print("FAILED: %s" % name)
    if passed + failed == 0:
        failed = 1
        print("summarize_tests: no test ran")
    if skipped:
        print("%d unsupported on this machine (not counted)" % skipped)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
