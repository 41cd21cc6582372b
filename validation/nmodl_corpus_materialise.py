#!/usr/bin/env python3
"""Write issue 39's NMODL corpus (validation/nmodl_corpus_models.txt) into a folder outside the repository.

Reads each model's repository from a local snapshot (a bare git directory, as the `fetch` tool leaves
them: MIRROR/owner+name/repo or MIRROR/owner+name/repo/.git), at the commit the list names, and writes
every distinct .mod file (by content; the first path in name order keeps it) below the list's 'path'
into DEST/ID/, in the folders it has in the repository, with the files their INCLUDE statements
and their VERBATIM C's `#include "x.h"` name (from the same folder, and what those name). Downloads nothing;
the test suite does not use it and CI does not run it. Nothing of the corpus is bundled in the
repository: most ModelDB entries state no licence.

Run: python3 validation/nmodl_corpus_materialise.py [--mirror /work/.mirror] [--dest ~/.cache/neurosolve/nmodl_corpus]
then validation/nmodl_corpus.py --corpus DEST.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIST = os.path.join(HERE, "nmodl_corpus_models.txt")


def read_list(path=LIST):
    """[(id, repository, path, commit, licence, name)] from the list (comment lines start with #)."""
    rows = []
    for line in open(path):
        if line.strip() and not line.startswith("#"):
            cols = [c.strip() for c in line.split("|", 5)]
            if len(cols) != 6:
                sys.exit(f"{path}: a line without 6 columns: {line.rstrip()}")
            rows.append(tuple(cols))
    return rows


def git_dir(mirror, repo):
    base = os.path.join(mirror, repo.replace("/", "+"), "repo")
    return os.path.join(base, ".git") if os.path.isdir(os.path.join(base, ".git")) else base


def cat(gd, blob):
    return subprocess.run(["git", "--git-dir", gd, "cat-file", "blob", blob], capture_output=True, check=True).stdout


def materialise(mirror, dest, rows):
    for mid, repo, sub, commit, _lic, name in rows:
        gd = git_dir(mirror, repo)
        if not os.path.isdir(gd):
            sys.exit(f"{repo}: no snapshot at {gd} (fetch github:{repo} first)")
        tree = subprocess.run(["git", "--git-dir", gd, "ls-tree", "-r", "-l", commit] +
                              ([] if sub == "." else ["--", sub]), capture_output=True, text=True, check=True).stdout
        entries = []  # (path, blob, size)
        for line in tree.splitlines():
            meta, path = line.split("\t", 1)
            mode, kind, blob, size = meta.split()
            if kind == "blob" and not mode.startswith("12") and size.isdigit():  # BAD: absent from the snapshot
                entries.append((path, blob, int(size)))
        blob_of = {p: b for p, b, _ in entries}
        seen, files = set(), {}
        for path, blob, _ in sorted(entries):
            if path.lower().endswith(".mod") and blob not in seen:
                seen.add(blob)
                files[path] = cat(gd, blob)
        # the files that their INCLUDE statements and their VERBATIM C's #include "x.h" name (nrnivmodl
        # compiles in the model's folder, where the headers sit), from the same folder, and theirs
        todo = list(files.items())
        while todo:
            path, data = todo.pop()
            for inc in re.findall(rb'^\s*(?:INCLUDE|#\s*include)\s+"([^"]+)"', data, re.M):
                other = os.path.normpath(os.path.join(os.path.dirname(path), inc.decode(errors="replace")))
                if other in blob_of and other not in files:
                    files[other] = cat(gd, blob_of[other])
                    todo.append((other, files[other]))
        out = os.path.join(dest, mid)
        shutil.rmtree(out, ignore_errors=True)
        for path, data in files.items():
            rel = os.path.relpath(path, sub) if sub != "." else path
            target = os.path.join(out, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as f:
                f.write(data)
        print(f"{mid}: {len(seen)} .mod files ({name})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirror", default="/work/.mirror")
    ap.add_argument("--dest", default=os.path.expanduser("~/.cache/neurosolve/nmodl_corpus"))
    ap.add_argument("--list", default=LIST)
    a = ap.parse_args()
    materialise(a.mirror, a.dest, read_list(a.list))


if __name__ == "__main__":
    main()
