"""Fetch the JavaScript the static book serves itself (widgets, require.js, MathJax), and
the accessibility checker its tests run in the pages (axe-core).

Runs ``npm pack`` for exact versions, checks each tarball against the sha512 integrity
pinned below, and unpacks only the files the pages load into ``book/_vendor/`` (served with
the book) and what only the tests load into ``tests/_vendor/`` (not shipped in the book).
Nothing is loaded from a CDN when the book is read. Re-running with everything in place does
nothing.
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
    "@jupyter-widgets/html-manager@1.0.6": (
        "sha512-+Mn+Ra8wyIHrYaUpfmf9A3dsLkt/NuwzPQN8sthdxBD35VV5cOJbpmgMhNR27n/rmP3mKyEe0PWCJrtZrXTXDQ==",
        {"package/dist/": "html-manager/"},
    ),
    "requirejs@2.3.4": (
        "sha512-qPD5gRrj6kGQ0ZySAJgqbArkaDqPMbQIT0zSZDkIv1mfA17w/tR2Faq5l2qqRf2CdQx6FWln9nUrgd2UDzb19A==",
        {"package/require.js": "require.js"},
    ),
    "mathjax@3.2.2": (
        "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
        {
            "package/es5/tex-mml-chtml.js": "mathjax/tex-mml-chtml.js",
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


def main() -> int:
    roots = [(VENDOR, PACKAGES), (TEST_VENDOR, TEST_PACKAGES)]
    wanted = {spec: entry[0] for _, packages in roots for spec, entry in packages.items()}
    files = [
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
    STAMP.write_text(json.dumps(wanted, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
