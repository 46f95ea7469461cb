"""Fetch the JavaScript the static book serves itself (MathJax), and the accessibility
checker its tests run in the pages (axe-core).

Runs ``npm pack`` for exact versions, checks each tarball against the sha512 integrity
pinned below, and unpacks only the files the pages load into ``book/_vendor/`` (served with
the book) and what only the tests load into ``tests/_vendor/`` (not shipped in the book).
Nothing is loaded from a CDN when the book is read. Re-running with everything in place does
nothing.

The book's MathJax is one file joined here from MathJax's own components (``BUNDLES``): the
TeX input and HTML output of ``tex-chtml.js`` and its assistive MathML for screen readers,
without the MathML input and the right-click menu (162 kB gzipped instead of
``tex-mml-chtml.js``'s 266 kB: half a second less on a 1.6 Mbps phone network, #45).
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENDOR = ROOT / "book" / "_vendor"
#: What only the tests inject into the built pages (tests/display/test_accessibility.py).
TEST_VENDOR = ROOT / "tests" / "_vendor"

# package spec -> (sha512 integrity from the npm registry, {path in tarball: path in vendor})
PACKAGES: dict[str, tuple[str, dict[str, str]]] = {
    "mathjax@3.2.2": (
        "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
        {
            # Self-contained (no font files): inlined into nbgrader's feedback HTML.
            "package/es5/tex-svg.js": "mathjax/tex-svg.js",
            "package/es5/output/chtml/fonts/woff-v2/": "mathjax/output/chtml/fonts/woff-v2/",
            "package/es5/input/tex/extensions/": "mathjax/input/tex/extensions/",
        },
    ),
}
# The same, unpacked into TEST_VENDOR: Deque's axe-core (MPL-2.0), the rules the accessibility
# test runs over every built page.
TEST_PACKAGES: dict[str, tuple[str, dict[str, str]]] = {
    "axe-core@4.10.3": (
        "sha512-Xm7bpRXnDSX2YE2YFfBk2FnF0ep6tmG7xPh8iHee8MIcrgq762Nkce856dYtJYLkuIoYZvGfTs/PbZhideTcEg==",
        {"package/axe.min.js": "axe.min.js", "package/LICENSE": "axe-LICENSE"},
    ),
}
#: Files joined from a package's members, in order (a package spec -> {file in vendor: parts}).
#: MathJax's loader and startup come first, so each component after them registers itself
#: with the startup (as in MathJax's combined builds); the preLoad line tells the loader they
#: are here, so it fetches none of them again (only TeX extensions a page asks for, from
#: ``input/tex/extensions/`` beside the file). Startup typesets after the whole file has run.
BUNDLES: dict[str, dict[str, list[str]]] = {
    "mathjax@3.2.2": {
        "mathjax/tex-chtml-lean.js": [
            "package/es5/startup.js",
            'MathJax.loader.preLoad("core", "input/tex", "output/chtml",'
            ' "output/chtml/fonts/tex", "output/chtml/fonts/tex.js", "a11y/assistive-mml");',
            "package/es5/core.js",
            "package/es5/input/tex.js",
            "package/es5/output/chtml.js",
            "package/es5/output/chtml/fonts/tex.js",
            "package/es5/a11y/assistive-mml.js",
        ],
    },
}
STAMP = VENDOR / "versions.json"


def integrity_of(path: Path) -> str:
    digest = hashlib.sha512(path.read_bytes()).digest()
    return "sha512-" + base64.b64encode(digest).decode()


def unpack(tarball: Path, mapping: dict[str, str], root: Path = VENDOR) -> int:
    copied = 0
    with tarfile.open(tarball) as archive:
        for member in archive.getmembers():
            if not member.isfile() or member.name.endswith(".map"):
                continue
            for prefix, target in mapping.items():
                if member.name == prefix or (
                    prefix.endswith("/") and member.name.startswith(prefix)
                ):
                    destination = root / (target + member.name[len(prefix) :])
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    source = archive.extractfile(member)
                    assert source is not None
                    destination.write_bytes(source.read())
                    copied += 1
    return copied


def bundle(tarball: Path, bundles: dict[str, list[str]], root: Path = VENDOR) -> int:
    """Join each bundle's parts (a member of ``tarball``, or a line of JavaScript) into one
    file; each part ends with a newline and a semicolon, so no statement runs into the next."""
    with tarfile.open(tarball) as archive:
        for target, parts in bundles.items():
            pieces = []
            for part in parts:
                if part.startswith("package/"):
                    source = archive.extractfile(part)
                    assert source is not None, part
                    pieces.append(source.read().decode())
                else:
                    pieces.append(part)
            destination = root / target
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_text("\n;".join(pieces) + "\n")
    return len(bundles)


def main() -> int:
    roots = [(VENDOR, PACKAGES), (TEST_VENDOR, TEST_PACKAGES)]
    wanted: dict[str, object] = {
        spec: entry[0] for _, packages in roots for spec, entry in packages.items()
    }
    wanted |= {
        f"{spec} {target}": parts
        for spec, joined in BUNDLES.items()
        for target, parts in joined.items()
    }
    files = [VENDOR / target for joined in BUNDLES.values() for target in joined] + [
        root / target
        for root, packages in roots
        for _, mapping in packages.values()
        for target in mapping.values()
        if not target.endswith("/")
    ]
    if STAMP.exists() and json.loads(STAMP.read_text()) == wanted and all(map(Path.exists, files)):
        print(f"vendored JavaScript up to date in {VENDOR.relative_to(ROOT)}")
        return 0
    for root, _ in roots:
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        for root, spec, (integrity, mapping) in (
            (root, spec, entry) for root, packages in roots for spec, entry in packages.items()
        ):
            print(f"npm pack {spec}", flush=True)
            result = subprocess.run(
                ["npm", "pack", spec, "--json", "--pack-destination", tmp],
                check=True,
                capture_output=True,
                text=True,
            )
            tarball = Path(tmp) / json.loads(result.stdout)[0]["filename"]
            if integrity_of(tarball) != integrity:
                print(f"error: {spec} does not match its pinned integrity", file=sys.stderr)
                return 1
            print(f"  {unpack(tarball, mapping, root)} files", flush=True)
            if spec in BUNDLES:
                print(f"  {bundle(tarball, BUNDLES[spec], root)} joined", flush=True)
    STAMP.write_text(json.dumps(wanted, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
