"""What check-deploy found, one line per check as it happens, and the exit status at the end."""
import os
import sys


def shown(path):
    """A path as the user would type it: relative to the current folder when inside it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


class Report:
    def __init__(self):
        self.passed = self.skipped = self.failed = 0

    def ok(self, path, what):
        self.passed += 1
        print("  ok    %s: %s" % (shown(path), what), flush=True)

    def skip(self, path, why):
        self.skipped += 1
        print("  skip  %s: %s" % (shown(path), why), flush=True)

    def fail(self, path, why):
        self.failed += 1
        print("  FAIL  %s: %s" % (shown(path), why), flush=True)

    def finish(self, files):
        print("check-deploy: %d file(s): %d check(s) passed, %d skipped, %d failed" %
              (files, self.passed, self.skipped, self.failed), file=sys.stderr if self.failed else sys.stdout)
        return 1 if self.failed else 0
