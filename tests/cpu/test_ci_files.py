"""The CI files run the README's commands: `make test` on a CPU, `make gpu-test` (with
PAGEWEAVER_REQUIRE_GPU=1) on the Hopper runner, the same in GitHub Actions and GitLab CI.

`make lint-ci` (part of `make test`) checks their syntax; this checks what they *do*: every
`make` target, tool and benchmark script a workflow calls is one the README tells a person to
run (and exists), and the GPU job has its timeout, concurrency limit and artifacts.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
GITHUB = {p.stem: yaml.safe_load(p.read_text()) for p in (ROOT / ".github/workflows").glob("*.yml")}
GITLAB = yaml.safe_load((ROOT / ".gitlab-ci.yml").read_text())
README = (ROOT / "README.md").read_text()
MAKE_TARGETS = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M))


def _heads(script: str) -> list[str]:
    """The commands a shell script runs, cut to what names them: ``make <target>``, a script
    path (``tools/x.sh``, ``benchmarks/x.py``, run by bash or a python)."""
    out = []
    for line in script.replace("\\\n", " ").splitlines():
        for part in re.split(r"&&|\|\||;|\|", line):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:
                words = part.split()
            words = [w for w in words if not re.match(r"^[A-Z_]+=", w)]  # VAR=value prefixes
            if not words:
                continue
            if words[0] == "make" and len(words) > 1:
                out.append(f"make {words[1]}")
            for w in words:
                if re.match(r"^(tools|benchmarks)/[\w./-]+\.(sh|py)$", w):
                    out.append(w)
    return out


def _github_scripts(name: str, job: str | None = None) -> list[str]:
    jobs = GITHUB[name]["jobs"]
    return [s["run"] for j, spec in jobs.items() if job in (None, j)
            for s in spec.get("steps", []) if "run" in s]


def _gitlab_scripts(job: str) -> list[str]:
    return list(GITLAB[job]["script"])


def _commands(scripts) -> set[str]:
    return {h for s in scripts for h in _heads(s)}


def test_heads_parser():
    assert _heads('set -o pipefail\nmake gpu-test GPU_PYTHON="$X" 2>&1 | tee log') == [
        "make gpu-test"]
    assert _heads('"$PY" benchmarks/bench_union8.py --smoke') == ["benchmarks/bench_union8.py"]
    assert _heads("tools/install_browser.sh") == ["tools/install_browser.sh"]


def test_cpu_jobs_run_make_test_like_ci_run():
    gh = _commands(_github_scripts("cpu"))
    gl = _commands(_gitlab_scripts("cpu"))
    assert gh == gl == {"make test", "tools/install_browser.sh"}
    assert "make test" in (ROOT / ".ci/run").read_text()


def test_gpu_jobs_run_make_gpu_test_with_the_gpu_required():
    gh = _commands(_github_scripts("gpu", "gpu-test"))
    gl = _commands(_gitlab_scripts("gpu"))
    assert gh == gl == {"make gpu-test", "make gpu-bench", "benchmarks/bench_union8.py"}
    job = GITHUB["gpu"]["jobs"]["gpu-test"]
    assert job["env"]["PAGEWEAVER_REQUIRE_GPU"] == "1"
    assert GITLAB["gpu"]["variables"]["PAGEWEAVER_REQUIRE_GPU"] == "1"
    # the re-record runs only on a manual run
    rerecord = [s for s in job["steps"] if "make gpu-bench" in s.get("run", "")]
    assert len(rerecord) == 1 and "workflow_dispatch" in rerecord[0]["if"]
    # the wheelhouse for offline runners comes from the README's command
    assert _commands(_github_scripts("gpu", "wheelhouse")) == {"make wheelhouse"}
    assert _commands(_gitlab_scripts("wheelhouse")) == {"make wheelhouse"}


def test_every_ci_command_is_a_readme_command():
    scripts = [s for name in GITHUB for s in _github_scripts(name)]
    scripts += [line for job, spec in GITLAB.items() if isinstance(spec, dict)
                and "script" in spec for line in spec["script"]]
    commands = _commands(scripts)
    assert commands
    for cmd in sorted(commands):
        assert cmd in README, f"the CI runs `{cmd}`, which the README does not name"
        if cmd.startswith("make "):
            assert cmd.split()[1] in MAKE_TARGETS, f"no Makefile target for `{cmd}`"
        else:
            assert (ROOT / cmd).is_file(), cmd


@pytest.mark.parametrize("where", ["github", "gitlab"])
def test_gpu_job_limits_and_artifacts(where):
    if where == "github":
        job = GITHUB["gpu"]["jobs"]["gpu-test"]
        assert job["runs-on"][:1] == ["self-hosted"] and {"gpu", "hopper"} <= set(job["runs-on"])
        assert 0 < job["timeout-minutes"] <= 60
        assert GITHUB["gpu"]["concurrency"]["cancel-in-progress"] is False
        upload = [s for s in job["steps"] if s.get("uses", "").startswith(
            "actions/upload-artifact")]
        assert upload and upload[0]["if"] == "always()"
        assert "logs/" in upload[0]["with"]["path"] and "benchmarks/results" in upload[0][
            "with"]["path"]
    else:
        job = GITLAB["gpu"]
        assert {"gpu", "hopper"} <= set(job["tags"]) and job["resource_group"]
        assert job["timeout"] and job["artifacts"]["when"] == "always"
        assert "logs/" in job["artifacts"]["paths"]


def test_runner_labels_are_documented():
    labels = yaml.safe_load((ROOT / ".github/actionlint.yaml").read_text())["self-hosted-runner"]
    doc = (ROOT / "docs/gpu-runner.md").read_text()
    for label in labels["labels"]:
        assert f"`{label}`" in doc
