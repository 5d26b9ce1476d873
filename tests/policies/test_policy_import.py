"""Own policies by import path: ``MODULE:CLASS``, ``FILE.py:CLASS?k=v``, in every executor."""

import csv
import textwrap
from pathlib import Path

import pytest
from conftest import bench_records as records

import policies
from benchmarks.config import BenchConfig
from benchmarks.run import run_benchmark
from policies.importing import parse_import_spec
from video_env import ConfigError, UnknownNameError
from video_env.cli import main

POLICY_SOURCE = textwrap.dedent(
    '''
    """A user's policy module."""
    from policies.base import Policy
    from video_env.actions import AnswerAction


    class AlwaysOption(Policy):
        """Answers ``tag`` at once (``pick`` is only kept)."""

        env_kinds = ("zoom", "clip_query")

        def __init__(self, pick=0, tag="x"):
            super().__init__()
            self.pick, self.tag = pick, tag

        def act(self, observation, info):
            return AnswerAction(self.tag)


    class NotAPolicy:
        pass
    '''
)


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "user_policies.py"
    path.write_text(POLICY_SOURCE)
    return path


def test_parse_import_spec_shapes() -> None:
    spec = parse_import_spec("pkg.mod:MyPolicy?k=0.8&flag=true&text=abc&n=null")
    assert spec is not None
    assert (spec.source, spec.attr, spec.is_file) == ("pkg.mod", "MyPolicy", False)
    assert dict(spec.kwargs) == {"k": 0.8, "flag": True, "text": "abc", "n": None}
    file_spec = parse_import_spec("runs/my policies/p.py:P")
    assert file_spec is not None and file_spec.is_file
    for not_a_spec in ("falconeye", "pacing-ppo:runs/ppo", "videoscout:qwen2.5-vl:/m", "a:b-c"):
        assert parse_import_spec(not_a_spec) is None
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        parse_import_spec("pkg.mod:P?novalue")


def test_file_spec_builds_the_class_with_its_kwargs(policy_file: Path) -> None:
    name = f"{policy_file}:AlwaysOption?pick=2&tag=hello"
    entry = policies.spec(name)
    assert entry.env_kinds == ("zoom", "clip_query")
    assert (entry.uses_llm, entry.needs_llm) == (False, False)
    policy = policies.make(name)
    assert (policy.pick, policy.tag) == (2, "hello")  # type: ignore[attr-defined]
    assert policy.name == name  # tables show the name the run was given


def test_module_spec_imports(tmp_path: Path, policy_file: Path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(policy_file.parent))
    policy = policies.make("user_policies:AlwaysOption?pick=1")
    assert type(policy).__name__ == "AlwaysOption"


def test_bad_specs_say_what_is_wrong(policy_file: Path) -> None:
    with pytest.raises(ConfigError, match="has no attribute 'Missing'"):
        policies.spec(f"{policy_file}:Missing")
    with pytest.raises(ConfigError, match=r"not a subclass of policies\.Policy"):
        policies.spec(f"{policy_file}:NotAPolicy")
    with pytest.raises(ConfigError, match="does not exist"):
        policies.spec(f"{policy_file.parent / 'nope.py'}:AlwaysOption")
    with pytest.raises(ConfigError, match="cannot import policy module"):
        policies.spec("no_such_module_anywhere:Policy")
    with pytest.raises(ConfigError, match="__main__"):
        policies.spec("__main__:AlwaysOption")
    with pytest.raises(ConfigError, match="unexpected keyword"):
        policies.make(f"{policy_file}:AlwaysOption?colour=red")
    with pytest.raises(UnknownNameError, match="MODULE:CLASS") as unknown:
        policies.spec("not-a-policy")
    assert "videoscout:pixel-dapo" in unknown.value.known  # the shipped checkpoints, by name


def test_a_broken_file_is_a_config_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(ConfigError, match="failed to load: RuntimeError: boom"):
        policies.spec(f"{broken}:P")


@pytest.mark.parametrize("executor", ["serial", "process"])
def test_bench_cli_runs_a_file_policy(policy_file: Path, tmp_path: Path, executor: str) -> None:
    out = tmp_path / "run"
    name = f"{policy_file}:AlwaysOption?tag=B"
    args = ["bench", "--suite", "synth-tiny", "--envs", "zoom", "--policies", name, "random",
            "--quiet", "--no-plots", "--out", str(out), "--executor", executor]  # fmt: skip
    assert main(args) == 0
    recs = records(out)
    assert {r["policy"] for r in recs} == {name, "random"}
    mine = [r for r in recs if r["policy"] == name]
    assert len(mine) == 12 and all(r["answer"] == "B" for r in mine)
    with (out / "summary.csv").open() as handle:
        assert name in {row["policy"] for row in csv.DictReader(handle)}


def test_a_main_module_policy_is_refused_by_the_process_executor(tmp_path: Path) -> None:
    class MainPolicy(policies.Policy):
        env_kinds = ("zoom",)

        def act(self, observation, info):  # pragma: no cover - never runs
            raise AssertionError

    MainPolicy.__module__ = "__main__"  # as a script's or a notebook's class is
    policies.register(
        "main-only", policies.PolicySpec(MainPolicy, False, False, ("zoom",), "x"), overwrite=True
    )
    config = BenchConfig(suite="synth-tiny", envs=("zoom",), policies=("main-only",))
    with pytest.raises(ConfigError, match=r"defined in __main__.*--executor serial"):
        run_benchmark(config, tmp_path, executor="process", plots=False)
    assert not list(tmp_path.iterdir())  # refused before anything was written


def test_editing_the_policy_file_is_a_new_set_up(policy_file: Path, tmp_path: Path) -> None:
    name = f"{policy_file}:AlwaysOption"
    config = BenchConfig(suite="synth-tiny", envs=("zoom",), policies=(name,))
    out = tmp_path / "run"
    run_benchmark(config, out, plots=False)
    policy_file.write_text(POLICY_SOURCE.replace('tag="x"', 'tag="y"'))
    with pytest.raises(ConfigError, match="user_policy_code"):
        run_benchmark(config, out, plots=False)
    assert policies.make(name).tag == "y"  # type: ignore[attr-defined]  # the edited code runs


def test_register_class_derives_the_entry_and_the_process_executor_refuses_main(
    tmp_path: Path,
) -> None:
    class Mine(policies.Policy):
        """Answers A."""

        env_kinds = ("zoom",)

        def act(self, observation, info):
            from video_env.actions import AnswerAction

            return AnswerAction("A")

    Mine.__module__ = "__main__"  # as a notebook's class is
    name = policies.register_class(Mine, "mine-a", overwrite=True)
    entry = policies.spec(name)
    assert (entry.env_kinds, entry.description, entry.uses_llm) == (("zoom",), "Answers A.", False)
    assert policies.make(name).name == "mine-a"
    config = BenchConfig(suite="synth-tiny", envs=("zoom",), policies=(name,), limit=2)
    with pytest.raises(ConfigError, match="defined in __main__"):
        run_benchmark(config, tmp_path / "p", executor="process", plots=False)
    result = run_benchmark(config, tmp_path / "s", executor="thread", plots=False)
    assert result.new_episodes == 2


def test_an_llm_parameter_makes_an_llm_policy(tmp_path: Path) -> None:
    source = POLICY_SOURCE + textwrap.dedent(
        """

        class Asks(AlwaysOption):
            def __init__(self, llm, pick=0):
                super().__init__(pick)
                self.llm = llm
        """
    )
    path = tmp_path / "asks.py"
    path.write_text(source)
    entry = policies.spec(f"{path}:Asks")
    assert (entry.uses_llm, entry.needs_llm) == (True, True)
    with pytest.raises(ConfigError, match="needs an LLM"):
        policies.make(f"{path}:Asks")
    sentinel = object()
    assert policies.make(f"{path}:Asks?pick=3", llm=sentinel).llm is sentinel  # type: ignore[arg-type,attr-defined]


def test_a_class_registered_by_the_run_is_refused_by_the_process_executor(tmp_path: Path) -> None:
    from policies.simple import RandomPolicy

    class Registered(RandomPolicy):  # importable module, but registered here at run time
        pass

    Registered.__module__ = "policies.simple"
    name = policies.register_class(Registered, "registered-here", overwrite=True)
    config = BenchConfig(suite="synth-tiny", envs=("zoom",), policies=(name,), limit=1)
    with pytest.raises(ConfigError, match="registered by this process"):
        run_benchmark(config, tmp_path / "p", executor="process", plots=False)
    assert run_benchmark(config, tmp_path / "s", executor="serial", plots=False).new_episodes == 1


def test_one_policy_named_twice_is_refused() -> None:
    from benchmarks.jobs import resolve_policies

    for names in (("pacing-threshold", "pacing-2x@0.8"), ("pacing-2x@0.80", "pacing-2x@0.8"),
                  ("falconeye", "falconeye[offline]")):  # fmt: skip
        with pytest.raises(ConfigError, match="names one policy twice"):
            resolve_policies(BenchConfig(suite="synth-tiny", policies=names))


def test_arguments_tell_two_runs_of_a_named_class_apart(policy_file: Path) -> None:
    source = POLICY_SOURCE.replace(
        'env_kinds = ("zoom", "clip_query")',
        'name = "always"\n    env_kinds = ("zoom", "clip_query")',
    )
    policy_file.write_text(source)
    assert policies.make(f"{policy_file}:AlwaysOption").name == "always"
    with_args = f"{policy_file}:AlwaysOption?tag=B"
    assert policies.make(with_args).name == with_args


def test_bad_options_and_a_registered_colon_name(policy_file: Path) -> None:
    from benchmarks.jobs import resolve_policies
    from benchmarks.provenance import user_policy_code
    from policies.simple import RandomPolicy

    with pytest.raises(ConfigError, match="given twice"):
        policies.spec(f"{policy_file}:AlwaysOption?tag=A&tag=B")
    with pytest.raises(ConfigError, match="finite"):
        policies.spec(f"{policy_file}:AlwaysOption?pick=NaN")
    policies.register("team:rand", policies.PolicySpec(RandomPolicy, False, False, ("zoom",), "x"),
                      overwrite=True)  # fmt: skip
    config = BenchConfig(suite="synth-tiny", policies=("team:rand",))
    code = user_policy_code(resolve_policies(config))
    assert set(code) == {"team:rand"}  # registered here: its class source is digested


def test_an_error_inside_the_constructor_keeps_its_traceback(tmp_path: Path) -> None:
    path = tmp_path / "raises.py"
    path.write_text(POLICY_SOURCE + "\n\nclass Raises(AlwaysOption):\n    def __init__(self):\n"
                    "        raise TypeError('inside')\n")  # fmt: skip
    with pytest.raises(TypeError, match="inside"):
        policies.make(f"{path}:Raises")
