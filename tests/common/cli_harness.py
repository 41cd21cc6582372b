"""Shared by the Python CLI tests: run the tool, record failed checks, report."""
import subprocess
import sys


class Harness:
    def __init__(self, exe):
        self.exe = exe
        self.failures = 0

    def check(self, cond, what):
        if not cond:
            self.failures += 1
            print("FAILED:", what)

    def run(self, *args, expect=0):
        p = subprocess.run([self.exe, *args], capture_output=True, text=True)
        self.check(p.returncode == expect,
                   f"{' '.join(args)}: exit {p.returncode}, expected {expect}: {p.stderr}")
        return p

    def finish(self, name):
        print(f"{name}:", f"{self.failures} checks FAILED" if self.failures else "all checks passed")
        sys.exit(1 if self.failures else 0)
