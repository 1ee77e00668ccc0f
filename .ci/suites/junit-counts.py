"""Prints `passed failed skipped` from a pytest JUnit XML report (the one argument).

Used by the suites that run pytest (30-cascade.sh, 31-livekit.sh) to report pytest's own counts;
a report that cannot be read exits non-zero, and the suite then counts pytest as one failure.
"""
import sys
import xml.etree.ElementTree as ET

root = ET.parse(sys.argv[1]).getroot()
suite = root if root.tag == "testsuite" else root.find("testsuite")
total = int(suite.get("tests"))
failed = int(suite.get("failures")) + int(suite.get("errors"))
skipped = int(suite.get("skipped"))
print(total - failed - skipped, failed, skipped)
