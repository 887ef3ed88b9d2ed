"""examples/github-actions-gpu.yml, read from the YAML: its structure checked (pinned actions, least permissions,
timeouts, who may reach the GPU runner, concurrency) and its jobs run, each step as written, as bash scripts in
clones of a temporary git repository (a bare repository as their origin), on CPU (CPU XFER_ARGS and
``GPU: "false"``, as its header says a CPU runner sets them), with a stub ``gh`` that keeps the pull request's comments in a
file and a ``python3`` whose venvs run this xferbench. The three actions it uses are played by fakes that do what
the workflow needs of them (checkout, upload and download of the artifact). ``if:`` and ``${{ }}`` are evaluated
by a small parser of GitHub's expression language, never by Python. No network, no GPU."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

import xferbench

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "examples" / "github-actions-gpu.yml"
CPU_ARGS = "--xfer-devices=cpu --xfer-sizes=64KiB,8MiB --benchmark-max-time=0.05 -p no:cacheprovider -k host"
MARKER = "<!-- xferbench-compare -->"
#: What a team puts in XFERBENCH: a commit of xferbench (the workflow refuses its placeholder).
PINNED = "xferbench[nvml] @ git+https://example.invalid/xferbench@" + "1" * 40
#: gh, as far as the workflow uses it: list a PR's comments (the --jq filter is the marker's), post, patch.
GH_STUB = r'''#!/usr/bin/env python3
import json, os, sys
state = os.environ["GH_STATE"]
comments = json.load(open(state)) if os.path.exists(state) else []
args = sys.argv[1:]
method = args[args.index("-X") + 1] if "-X" in args else "GET"
with open(state + ".log", "a") as log:
    log.write(method + " " + next(a for a in args if a.startswith("repos/")) + "\n")
if method == "GET":
    assert "startswith(\"<!-- xferbench-compare -->\")" in args[args.index("--jq") + 1]
    print("\n".join(str(c["id"]) for c in comments if c["body"].startswith("<!-- xferbench-compare -->")))
    sys.exit(0)
if os.environ.get("GH_READ_ONLY"):
    print("HTTP 403: Resource not accessible by integration", file=sys.stderr)
    sys.exit(1)
body = open(next(a for a in args if a.startswith("body=@"))[6:]).read()
if method == "POST":
    comments.append({"id": 100 + len(comments), "body": body})
else:
    target = int(next(a for a in args if a.startswith("repos/")).rsplit("/", 1)[1])
    next(c for c in comments if c["id"] == target)["body"] = body
json.dump(comments, open(state, "w"))
'''


#: python3 as the workflow uses it: ``-m venv [...] DIR`` makes a venv whose python and xferbench run this checkout's
#: xferbench, without torch (a hosted runner's Python has none) until its pip is asked to install torch; its pip
#: records what it was asked to install (the real install is test_wheel's).
PYTHON_STUB = r'''#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  for last; do :; done
  mkdir -p "$last/bin" "$last/notorch/torch"
  venv=$(cd "$last" && pwd)
  echo 'raise ImportError("No module named torch")' > "$venv/notorch/torch/__init__.py"
  for tool in python xferbench; do
    module=""; [ "$tool" = xferbench ] && module="-m xferbench.cli"
    printf '#!/bin/sh\nP=%s; [ -d %s/notorch ] && P=%s/notorch:$P\nPYTHONPATH=$P exec %s %s "$@"\n' \
        "$SRC" "$venv" "$venv" "$PYTHON" "$module" > "$venv/bin/$tool"
  done
  printf '#!/bin/sh\necho "$@" >> %s\ncase "$*" in *torch*) rm -rf %s/notorch;; esac\n' "$PIP_LOG" "$venv" > "$venv/bin/pip"
  chmod +x "$venv/bin/python" "$venv/bin/xferbench" "$venv/bin/pip"
  exit 0
fi
PYTHONPATH="$SRC" exec "$PYTHON" "$@"
'''

#: pipx as the lint job uses it: ``pipx run zizmor==V ARGS`` runs the zizmor installed here.
PIPX_STUB = r'''#!/bin/sh
[ "$1" = run ] && case "$2" in zizmor==*) shift 2; exec "$ZIZMOR" "$@";; esac
exit 2
'''

SHA = re.compile(r"[\w-]+/[\w-]+@[0-9a-f]{40}")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


class Expression:
    """GitHub's expression language, the part the workflow uses: literals, contexts (a missing property is null),
    ==, !=, !, &&, || (which yield an operand, as in JavaScript), parentheses, and the status and string functions."""

    TOKEN = re.compile(r"\s*(?:('(?:[^']|'')*')|(==|!=|&&|\|\||[!(),])|([A-Za-z_][\w.*-]*)|(\d+))")

    def __init__(self, text: str, context: dict[str, Any], status: dict[str, bool]) -> None:
        self.tokens, pos = [], 0
        while text[pos:].strip():
            found = self.TOKEN.match(text, pos)
            assert found, f"not an expression this parser knows: {text[pos:]!r}"
            self.tokens.append(next(g for g in found.groups() if g is not None))
            pos = found.end()
        self.context, self.status, self.at = context, status, 0

    def value(self) -> Any:
        result = self._or()
        assert self.at == len(self.tokens), self.tokens[self.at:]
        return result

    def _next(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def _take(self, token: str) -> bool:
        if self._next() == token:
            self.at += 1
            return True
        return False

    def _or(self) -> Any:
        left = self._and()
        while self._take("||"):
            right = self._and()
            left = left if truthy(left) else right
        return left

    def _and(self) -> Any:
        left = self._compare()
        while self._take("&&"):
            right = self._compare()
            left = right if truthy(left) else left
        return left

    def _compare(self) -> Any:
        left = self._unary()
        for op in ("==", "!="):
            if self._take(op):
                same = loose(left) == loose(self._unary())
                return same if op == "==" else not same
        return left

    def _unary(self) -> Any:
        if self._take("!"):
            return not truthy(self._unary())
        if self._take("("):
            inner = self._or()
            assert self._take(")")
            return inner
        token = self.tokens[self.at]
        self.at += 1
        if token.startswith("'"):
            return token[1:-1].replace("''", "'")
        if token in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[token]
        if token.isdigit():
            return int(token)
        if self._take("("):
            args = [] if self._take(")") else self._arguments()
            return self._call(token, args)
        found: Any = self.context
        for part in token.split("."):
            found = found.get(part) if isinstance(found, dict) else None
        return found

    def _arguments(self) -> list[Any]:
        args = [self._or()]
        while self._take(","):
            args.append(self._or())
        assert self._take(")")
        return args

    def _call(self, name: str, args: list[Any]) -> Any:
        if name in self.status:
            return self.status[name]
        if name == "contains":
            return str(args[1]).lower() in (args[0] if isinstance(args[0], list) else str(args[0]).lower())
        if name == "startsWith":
            return str(args[0]).lower().startswith(str(args[1]).lower())
        raise AssertionError(f"function {name}() is not one the workflow should need")


def truthy(value: Any) -> bool:
    return value not in (None, False, 0, "")


def loose(value: Any) -> Any:
    """GitHub compares strings case-insensitively and null as ''."""
    return "" if value is None else value.lower() if isinstance(value, str) else value


def evaluate(text: str, context: dict[str, Any], status: dict[str, bool] | None = None) -> Any:
    status = status or {"success": True, "always": True, "failure": False, "cancelled": False}
    return Expression(text.strip().removeprefix("${{").removesuffix("}}"), context, status).value()


def interpolate(text: str, context: dict[str, Any]) -> str:
    """Each ``${{ }}`` of ``text`` replaced by its value as GitHub writes it (null: '', booleans: true/false)."""
    def one(match: re.Match[str]) -> str:
        found = evaluate(match.group(1), context)
        return "" if found is None else str(found).lower() if isinstance(found, bool) else str(found)

    return re.sub(r"\$\{\{(.*?)\}\}", one, str(text))


def github_context(event: str, pr: int = 0, fork: bool = False) -> dict[str, Any]:
    return {"event_name": event, "token": "token", "repository": "team/project", "server_url": "https://github.com",
            "run_id": "42", "sha": "0" * 40, "ref": f"refs/pull/{pr}/merge" if pr else "refs/heads/main",
            "event": {"pull_request": {"number": pr, "head": {"repo": {
                "full_name": "someone/fork" if fork else "team/project"}}}} if pr else {}}


class Workflow:
    """One event's run of the example: each job whose ``if:`` holds, after the jobs it needs, in a clone of its own;
    each step in order, a failed step skipping the rest (unless its ``if:`` says always())."""

    def __init__(self, origin: Path, stubs: Path, event: str, pr: int = 0, fork: bool = False,
                 extra_env: dict[str, str] | None = None, definition: dict[str, Any] | None = None) -> None:
        self.origin, self.stubs = origin, stubs
        self.definition = definition or yaml.safe_load(WORKFLOW.read_text())
        self.github = github_context(event, pr, fork)
        if pr:  # the pull request's base: the tip of main, which the confirmation runs beside the change
            self.github["event"]["pull_request"]["base"] = {
                "sha": _git(origin.parent, "--git-dir", str(origin), "rev-parse", "main").strip()}
        self.artifacts = origin.parent / "artifacts"
        self.env = {**os.environ, **(extra_env or {}), "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}",
                    "GITHUB_REPOSITORY": "team/project", "GITHUB_RUN_ID": "42", "GITHUB_SERVER_URL": "https://github.com",
                    "GH_STATE": str(origin.parent / "comments"), "GITHUB_STEP_SUMMARY": str(origin.parent / "summary.md"),
                    "RUNNER_NAME": "gpu-1"}
        self.results: dict[str, str] = {}  # job -> success, failure, skipped
        self.ran: list[str] = []  # "job: step" in order
        self.printed: dict[str, str] = {}

    def context(self, outputs: dict[str, Any] | None = None) -> dict[str, Any]:
        needs = {job: {"result": result} for job, result in self.results.items()}
        return {"github": self.github, "needs": needs, "steps": outputs or {}, "env": {}}

    def substitute(self, text: str, outputs: dict[str, Any] | None = None) -> str:
        return interpolate(text, self.context(outputs))

    def run(self, xfer_args: str) -> dict[str, str]:
        jobs = self.definition["jobs"]
        for name, job in jobs.items():
            needs = job.get("needs", [])
            needs = [needs] if isinstance(needs, str) else needs
            failed_need = any(self.results.get(n) != "success" for n in needs)
            condition = str(job.get("if", "success()"))
            status = {"success": not failed_need, "always": True, "failure": False, "cancelled": False}
            if "success()" not in condition and "always()" not in condition and "cancelled()" not in condition:
                wanted = not failed_need and truthy(evaluate(condition, self.context(), status))
            else:
                wanted = truthy(evaluate(condition, self.context(), status))
            self.results[name] = self._job(name, job, xfer_args) if wanted else "skipped"
        return self.results

    def _job(self, name: str, job: dict[str, Any], xfer_args: str) -> str:
        workspace = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.origin.parent))  # a fresh runner's
        workspace.rmdir()
        _git(self.origin.parent, "clone", "-q", str(self.origin), str(workspace))
        env = {**self.env, **{k: self.substitute(v) for k, v in self.definition["env"].items()}, "XFERBENCH": PINNED,
               "GPU": "false", "XFER_ARGS": xfer_args, "LOCK": str(self.origin.parent / "gpu.lock")}
        outputs: dict[str, Any] = {}
        failed = False
        for step in job["steps"]:
            condition = str(step.get("if", "success()"))
            status = {"success": not failed, "always": True, "failure": failed, "cancelled": False}
            if "always()" not in condition and "failure()" not in condition and "success()" not in condition:
                wanted = not failed and truthy(evaluate(condition, self.context(outputs), status))
            else:
                wanted = truthy(evaluate(condition, self.context(outputs), status))
            if not wanted:
                continue
            label = f"{name}: {step.get('name') or step['uses'].split('@')[0]}"
            self.ran.append(label)
            ok = self._action(step, workspace) if "uses" in step else self._script(step, workspace, env, outputs, label)
            if "uses" in step:
                print(f"--- {label}: {'done' if ok else 'failed'}")
            failed |= not ok
        return "failure" if failed else "success"

    def _action(self, step: dict[str, Any], workspace: Path) -> bool:
        """The three actions the workflow uses, as fakes doing what it needs of them; any other is refused."""
        action, with_ = step["uses"].split("@")[0], step.get("with", {})
        if action == "actions/checkout":
            assert with_.get("persist-credentials") is False  # the clone is the checkout
            return True
        folder = self.artifacts / with_["name"]
        if action == "actions/upload-artifact":
            shutil.rmtree(folder, ignore_errors=True)
            shutil.copytree(workspace / with_["path"], folder)
            return True
        if action == "actions/download-artifact":
            if not folder.exists():
                return False
            shutil.copytree(folder, workspace / with_["path"], dirs_exist_ok=True)
            return True
        raise AssertionError(f"an action the fakes do not play: {action}")

    def _script(self, step: dict[str, Any], workspace: Path, env: dict[str, str], outputs: dict[str, Any],
                label: str) -> bool:
        script = self.substitute(step["run"], outputs)
        step_env = {**env, **{k: self.substitute(v, outputs) for k, v in step.get("env", {}).items()}}
        done = subprocess.run(["bash", "-e", "-c", script], cwd=workspace, env=step_env, capture_output=True, text=True)
        self.printed[label] = done.stdout + done.stderr
        print(f"--- {label}: exit {done.returncode}\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
        return done.returncode == 0


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A repository that uses xferbench (the workflow, one benchmark of its own), its bare origin, and the stubs."""
    _git(tmp_path, "init", "-q", "--bare", "origin.git")
    repo = tmp_path / "project"
    _git(tmp_path, "init", "-q", "-b", "main", str(repo))
    (repo / ".github" / "workflows").mkdir(parents=True)
    shutil.copy(WORKFLOW, repo / ".github" / "workflows" / "xferbench.yml")
    (repo / "bench").mkdir()
    (repo / "bench" / "conftest.py").write_text('pytest_plugins = ("xferbench.measure.session.plugin",)\n')
    (repo / "bench" / "test_our_host_copy.py").write_text(OWN_BENCHMARK)
    (repo / ".gitignore").write_text(".venv\nreport\nbaseline\naa\nnoise.json\n")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "benchmarks")
    _git(repo, "push", "-q", str(tmp_path / "origin.git"), "main")
    _git(tmp_path / "origin.git", "symbolic-ref", "HEAD", "refs/heads/main")
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    src = Path(xferbench.__file__).resolve().parents[1]
    for name, text in (("gh", f"#!{sys.executable}\n" + GH_STUB), ("python3", PYTHON_STUB), ("pipx", PIPX_STUB)):
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    for name, value in {"SRC": str(src), "PYTHON": sys.executable, "PIP_LOG": str(tmp_path / "pip.log"),
                        "ZIZMOR": shutil.which("zizmor") or str(Path(sys.executable).parent / "zizmor")}.items():
        monkeypatch.setenv(name, value)
    return tmp_path / "origin.git", stubs


#: A team's own benchmark, written with the xfer fixture (docs/regression-tracking.md shows it).
OWN_BENCHMARK = '''import pytest


@pytest.mark.xfer("host")
def test_our_host_copy(xfer_case, xfer):
    xfer(xfer_case)
'''


def _comments(origin: Path) -> list[dict[str, Any]]:
    state = origin.parent / "comments"
    return json.loads(state.read_text()) if state.exists() else []


DEFINITION = yaml.safe_load(WORKFLOW.read_text())
JOBS = DEFINITION["jobs"]
GPU = ["self-hosted", "linux", "gpu"]


class TestStructure:
    """What makes the workflow safe to copy into a public repository, read from the YAML."""

    def test_actions_are_pinned_by_commit_with_their_version_said(self):
        lines = [line for line in WORKFLOW.read_text().splitlines() if "uses:" in line]
        assert len(lines) == 7
        for line in lines:
            assert SHA.search(line) and re.search(r"  # v\d+\.\d+\.\d+$", line), line

    def test_least_permissions_per_job_and_a_timeout_each(self):
        assert DEFINITION["permissions"] == {}
        wanted = {"lint": {"contents": "read"}, "measure": {"contents": "read"}, "store": {"contents": "write"},
                  "comment": {"pull-requests": "write"}, "noise": {"contents": "write"}}
        assert {name: job["permissions"] for name, job in JOBS.items()} == wanted
        assert all(0 < job["timeout-minutes"] <= 480 for job in JOBS.values())
        # code of a pull request runs only where the token cannot write the repository
        writers = [name for name, job in JOBS.items() if "write" in job["permissions"].values()]
        assert [n for n in writers if "pull_request" in str(JOBS[n]["if"])] == ["comment"]
        assert "uses: actions/checkout" not in yaml.safe_dump(JOBS["comment"])  # no code of the PR there

    def test_no_trigger_runs_a_fork_with_secrets(self):
        assert set(DEFINITION[True]) == {"push", "pull_request", "schedule", "workflow_dispatch"}  # YAML's on: is True

    @pytest.mark.parametrize(("event", "fork", "environment"), [
        ("pull_request", True, "external-pull-request"),  # waits for a maintainer's approval
        ("pull_request", False, "gpu-runner"),
        ("push", False, "gpu-runner"),
    ])
    def test_a_fork_reaches_the_gpu_runner_only_through_an_approved_environment(self, event, fork, environment):
        context = {"github": github_context(event, 9 if event == "pull_request" else 0, fork)}
        assert evaluate(JOBS["measure"]["environment"], context) == environment
        assert JOBS["measure"]["runs-on"] == GPU and truthy(evaluate(JOBS["measure"]["if"], context))

    def test_concurrency_queues_per_machine_and_never_drops_a_commit_of_main(self):
        group, cancel = DEFINITION["concurrency"]["group"], DEFINITION["concurrency"]["cancel-in-progress"]

        def of(event: str, sha: str, pr: int = 0) -> tuple[str, str]:
            context = {"github": {**github_context(event, pr), "sha": sha}}
            return interpolate(group, context), interpolate(cancel, context)

        main_a, main_b = of("push", "a" * 40), of("push", "b" * 40)
        assert main_a[0] != main_b[0] and main_a[1] == "false"  # each commit its own group: none replaced
        assert of("pull_request", "a" * 40, 3) == of("pull_request", "b" * 40, 3) == ("xferbench-pull_request-"
                                                                                  "refs/pull/3/merge", "true")
        runs = [step["run"] for job in ("measure", "noise") for step in JOBS[job]["steps"] if "run" in step]
        benchmark_lines = [line for run in runs for line in run.splitlines() if "xferbench run" in line
                           or "calibrate" in line]
        assert benchmark_lines and all('flock --timeout' in line and '"$LOCK"' in line for line in benchmark_lines
                                       if not line.strip().startswith("--"))

    def test_a_step_that_holds_a_token_runs_git_or_gh_alone(self):
        """Nothing installed unpinned (xferbench's dependencies) runs where the token is: neither pip nor Python."""
        holders = [step for job in JOBS.values() for step in job["steps"] if "GH_TOKEN" in step.get("env", {})]
        assert len(holders) == 4
        for step in holders:
            words = set(re.findall(r"[\w./-]+", step["run"]))
            assert not words & {"pip", "python", "python3", ".venv/bin/xferbench", ".venv/bin/python"}, step["name"]

    def test_the_repository_s_own_benchmarks_run_in_every_measuring_command(self):
        runs = [step["run"] for job in ("measure", "noise") for step in JOBS[job]["steps"] if "run" in step]
        lines = [[line, *[n for n in lines[i + 1:] if not n.strip().startswith("#")][:1]] for run in runs
                 if (lines := run.splitlines()) for i, line in enumerate(lines) if "xferbench run" in line]
        # $own, or each side's own bench/ where the base commit runs in a folder of its own
        assert len(lines) == 3 and all("$XFER_ARGS $own" in pair[0] or "$([ -d bench ] && echo bench)" in pair[1]
                                       for pair in lines), lines

    def test_the_install_refuses_the_placeholder_and_checks_cuda_only_on_a_gpu_runner(self, tmp_path):
        install = next(s["run"] for s in JOBS["measure"]["steps"] if s.get("name", "").startswith("Install"))
        # python3 as a venv maker whose python exits 7, as `import torch; assert torch.cuda.is_available()` fails
        stub = tmp_path / "python3"
        stub.write_text("#!/bin/sh\nmkdir -p .venv/bin\nprintf '#!/bin/sh\\nexit 7\\n' > .venv/bin/python\n"
                        "printf '#!/bin/sh\\nexit 0\\n' > .venv/bin/pip\nchmod +x .venv/bin/python .venv/bin/pip\n")
        stub.chmod(0o755)

        def run(xferbench: str, gpu: str) -> subprocess.CompletedProcess[str]:
            env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}", "XFERBENCH": xferbench,
                   "GPU": gpu}
            return subprocess.run(["bash", "-e", "-c", install], cwd=tmp_path, env=env, capture_output=True, text=True)

        refused = run(DEFINITION["env"]["XFERBENCH"], "false")
        assert refused.returncode == 1 and "::error::set XFERBENCH" in refused.stdout
        assert run(PINNED, "false").returncode == 0  # a CPU runner: CUDA is not asked for
        assert run(PINNED, "true").returncode == 7  # a GPU runner whose torch has no CUDA: the check fails the step

    def test_gh_is_checked_and_the_confirmation_and_noise_are_built_in(self):
        comment = "\n".join(step.get("run", "") for step in JOBS["comment"]["steps"])
        assert comment.index("command -v gh") < comment.index("gh api")
        compare = next(step["run"] for step in JOBS["measure"]["steps"] if step.get("name", "").startswith("Compare"))
        assert "ab --only report/first.json" in compare and "{select}" in compare and "--noise" in compare
        assert 'cd $base && env -u XFERBENCH_TEST_SLOWDOWN' in compare  # the slowdown is the change's
        assert any("noise/$machine.json" in step.get("run", "") for step in JOBS["noise"]["steps"])
        assert DEFINITION[True]["schedule"] and "zizmor" in JOBS["lint"]["steps"][-1]["run"]

    @pytest.mark.skipif(not (shutil.which("zizmor") or (Path(sys.executable).parent / "zizmor").exists()),
                        reason="zizmor is not installed (pip install zizmor)")
    def test_zizmor_finds_nothing_and_the_auditor_only_the_self_hosted_runner(self):
        zizmor = shutil.which("zizmor") or str(Path(sys.executable).parent / "zizmor")
        plain = subprocess.run([zizmor, "--offline", "--format=json", str(WORKFLOW)], capture_output=True, text=True)
        assert plain.returncode == 0 and json.loads(plain.stdout) == []
        audit = subprocess.run([zizmor, "--offline", "--persona=auditor", "--format=json", str(WORKFLOW)],
                               capture_output=True, text=True)
        assert {finding["ident"] for finding in json.loads(audit.stdout)} == {"self-hosted-runner"}


class TestExpressions:
    """The parser the jobs run under: GitHub's semantics, not Python's."""

    def test_operators_yield_operands_and_compare_loosely(self):
        context = {"github": github_context("pull_request", 3, fork=True)}
        assert evaluate("github.event_name == 'PULL_REQUEST' && 'a' || 'b'", context) == "a"
        assert evaluate("github.event.missing.deep == ''", context) is True
        assert evaluate("!(github.event_name != 'push')", context) is False
        assert evaluate("startsWith(github.ref, 'refs/pull/')", context) is True
        with pytest.raises(AssertionError):
            evaluate("__import__('os')", context)


@pytest.mark.slow
def test_the_example_workflow_runs_first_pr_main_and_a_slowed_pr(project: tuple[Path, Path]) -> None:
    origin, stubs = project
    # A fork's first pull request: no stored run yet, a read-only token. Green, and no comment posted.
    fork = Workflow(origin, stubs, "pull_request", pr=6, fork=True, extra_env={"GH_READ_ONLY": "1"})
    assert fork.run(CPU_ARGS) == {"lint": "success", "measure": "success", "store": "skipped", "comment": "success",
                                  "noise": "skipped"}
    assert "no comment posted" in fork.printed["comment: Post it (one comment, updated in place; gh alone holds the token)"]
    assert _comments(origin) == [] and "zizmor" in fork.printed["lint: zizmor"].lower()

    # The first pull request of the repository itself: one comment saying there is no baseline yet.
    first = Workflow(origin, stubs, "pull_request", pr=7)
    assert first.run(CPU_ARGS)["comment"] == "success"
    comments = _comments(origin)
    assert len(comments) == 1 and comments[0]["body"].startswith(MARKER) and "No stored run" in comments[0]["body"]

    # main: the run (the package's benchmarks and the repository's own) is stored on the branch, with the dashboard.
    main = Workflow(origin, stubs, "push")
    assert main.run(CPU_ARGS) == {"lint": "success", "measure": "success", "store": "success", "comment": "skipped",
                                  "noise": "skipped"}
    tip = _git(origin.parent, "--git-dir", "origin.git", "ls-tree", "-r", "--name-only", "xferbench-data").split()
    assert "index.html" in tip and sum(n.startswith("machines/") and n.endswith(".json") for n in tip) == 1
    stored = next(n for n in tip if n.startswith("machines/") and n.endswith(".json"))
    names = {b["name"].split("[")[0] for b in json.loads(_git(origin.parent, "--git-dir", "origin.git", "show",
                                                              f"xferbench-data:{stored}"))["benchmarks"]}
    assert names == {"test_host", "test_our_host_copy"}
    installs = set((origin.parent / "pip.log").read_text().splitlines())
    assert installs == {f"install {PINNED}", "install torch --index-url https://download.pytorch.org/whl/cpu"}

    # A pull request that makes host copies 10x slower: flagged, confirmed side by side with its base (ab), the
    # same comment updated, and a red check.
    slowed = Workflow(origin, stubs, "pull_request", pr=7, extra_env={"XFERBENCH_TEST_SLOWDOWN": "host=10"})
    results = slowed.run(CPU_ARGS)
    said = slowed.printed["measure: Compare, and confirm side by side with the base commit"]
    if results["comment"] == "success" and "Busy machine:" in said and "can't tell" in said:
        pytest.skip("the machine was busier than its cores while the runs were timed: compare said it can't tell")
    assert results["measure"] == "success" and results["comment"] == "failure"
    assert "not reproduced" not in said or "regression" in said
    comments = _comments(origin)
    assert len(comments) == 1 and "regression" in comments[0]["body"] and "No stored run" not in comments[0]["body"]
    assert "5 base run" not in comments[0]["body"] and "1 base run(s) against 1 new run(s)" in comments[0]["body"]
    body = comments[0]["body"]
    assert "Side by side with the base commit" in body and "0 confirmed regression(s)" not in body
    assert "confirmed regression(s)" in body
    log = [tuple(line.split()) for line in (origin.parent / "comments.log").read_text().splitlines()]
    ours = "repos/team/project/issues/7/comments"  # the fork's refused POST (issue 6) is logged too
    assert log.count(("POST", ours)) == 1 and sum(m == "PATCH" for m, _ in log) == 1
    assert slowed.ran[-1] == "comment: Fail on a confirmed regression"


@pytest.mark.slow
def test_a_pr_whose_compare_fails_on_bad_input_is_red_without_a_comment(project: tuple[Path, Path]) -> None:
    """compare's exit 2 fails the measure job itself; the comment job does not run."""
    origin, stubs = project
    definition = yaml.safe_load(WORKFLOW.read_text())
    _without_benchmarks(definition, "mkdir -p baseline && echo '{}' > report/candidate.json && echo '{}' > baseline/x.json")
    for step in definition["jobs"]["measure"]["steps"]:  # a candidate that is not a run, and one stored "run"
        if str(step.get("name", "")).startswith("Baseline"):
            step["run"] = "true"
    results = Workflow(origin, stubs, "pull_request", pr=7, definition=definition).run(CPU_ARGS)
    assert results["measure"] == "failure" and results["comment"] == "skipped" and _comments(origin) == []


def _without_benchmarks(definition: dict[str, Any], candidate: str) -> None:
    """The Benchmarks step made cheap (minutes on CPU): it writes ``candidate`` as the run instead."""
    for step in definition["jobs"]["measure"]["steps"]:
        if step.get("name") == "Benchmarks":
            step["run"] = f"mkdir -p report && {candidate}"


@pytest.mark.slow
def test_a_read_only_token_skips_the_comment_cleanly(project: tuple[Path, Path]) -> None:
    """A token that cannot write (a Dependabot pull request): the comment fails with a notice, the check stays green."""
    origin, stubs = project
    definition = yaml.safe_load(WORKFLOW.read_text())
    _without_benchmarks(definition, f"cp {ROOT / 'tests' / 'data' / 'cpu-sample.json'} report/candidate.json")
    job = Workflow(origin, stubs, "pull_request", pr=8, extra_env={"GH_READ_ONLY": "1"}, definition=definition)
    assert job.run(CPU_ARGS)["comment"] == "success" and _comments(origin) == []
    assert "No stored run" in (origin.parent / "summary.md").read_text()


@pytest.mark.parametrize("recipe", ["as written", "without its torch line"])
def test_the_cpu_recipe_installs_torch_into_a_python_without_it(project: tuple[Path, Path], tmp_path: Path,
                                                               recipe: str) -> None:
    """A hosted runner's Python has no torch: the install step of a CPU runner (GPU "false") brings torch's CPU build,
    without which the benchmarks cannot run (the stub venv hides torch until its pip is asked for it)."""
    _, stubs = project
    install = next(s["run"] for s in JOBS["measure"]["steps"] if s.get("name", "").startswith("Install"))
    if recipe != "as written":
        install = install.replace(".venv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu",
                                  "true")
    env = {**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}", "XFERBENCH": PINNED, "GPU": "false"}
    work = tmp_path / "runner"
    work.mkdir()
    assert subprocess.run(["bash", "-e", "-c", install], cwd=work, env=env).returncode == 0
    probe = subprocess.run([str(work / ".venv" / "bin" / "python"), "-c", "import torch"], capture_output=True, text=True)
    assert (probe.returncode == 0) is (recipe == "as written"), probe.stderr
