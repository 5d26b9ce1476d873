"""DAPO's loss pieces (Eqs. (4)–(6)) against values computed by hand for tiny tensors."""

import json
import math

import pytest

from policies.training.dapo import (
    DAPOSettings,
    clipped_surrogate,
    dapo_loss,
    fill_batch,
    group_advantages,
    group_has_mixed_outcomes,
    group_is_informative,
    k3_kl,
    overlong_penalty,
)
from video_env.errors import ConfigError
from video_env.types import VideoQA

torch = pytest.importorskip("torch")


def test_advantage_is_group_relative() -> None:
    # mean 0.5, population std 0.5 -> (R - 0.5) / 0.5
    adv = group_advantages(torch.tensor([1.0, 0.0, 0.0, 1.0]), std_eps=0.0)
    assert adv.tolist() == [1.0, -1.0, -1.0, 1.0]
    # rewards 1.8, 0.3, 0.3: mean 0.8, std sqrt((1 + 0.25 + 0.25) / 3) = sqrt(0.5)
    adv = group_advantages(torch.tensor([1.8, 0.3, 0.3]), std_eps=0.0)
    expected = [1.0 / math.sqrt(0.5), -0.5 / math.sqrt(0.5), -0.5 / math.sqrt(0.5)]
    assert adv.tolist() == pytest.approx(expected, rel=1e-6)
    assert group_advantages(torch.tensor([0.3, 0.3])).tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="1-D"):
        group_advantages(torch.zeros(2, 2))


def test_clipping_on_both_sides() -> None:
    ratios = torch.tensor([[1.5, 0.5, 0.5, 1.5, 1.1]])
    logp = ratios.log()
    old = torch.zeros_like(logp)
    adv = torch.tensor([[1.0, -1.0, 1.0, -1.0, 1.0]])
    got = clipped_surrogate(logp, old, adv, eps_low=0.2, eps_high=0.28)
    # A > 0, r = 1.5: capped at 1 + 0.28; A < 0, r = 0.5: capped at 1 - 0.2 (-0.8 < -0.5);
    # A > 0, r = 0.5 and A < 0, r = 1.5: the unclipped term is the minimum; r = 1.1 inside.
    assert got.tolist()[0] == pytest.approx([1.28, -0.8, 0.5, -1.5, 1.1], rel=1e-6)


def test_a_clipped_token_has_no_gradient() -> None:
    logp = torch.tensor([[math.log(1.5), math.log(1.1)]], requires_grad=True)
    old = torch.zeros(1, 2)
    out = dapo_loss(logp, old, None, torch.tensor([1.0]), torch.ones(1, 2), DAPOSettings(beta=0))
    out.loss.backward()
    assert logp.grad is not None
    assert logp.grad[0, 0] == 0.0  # clipped above 1.28
    assert logp.grad[0, 1] == pytest.approx(-1.1 / 2)  # d(-r/2)/dlogp = -r/2
    assert out.clip_high_fraction == 0.5 and out.clip_low_fraction == 0.0


def test_zero_advantage_gives_zero_loss_and_gradient() -> None:
    logp = torch.tensor([[-0.3, -2.0]], requires_grad=True)
    out = dapo_loss(logp, logp.detach() - 0.4, None, torch.zeros(1), torch.ones(1, 2),
                    DAPOSettings(beta=0))  # fmt: skip
    out.loss.backward()
    assert out.loss.item() == 0.0
    assert logp.grad is not None and logp.grad.abs().sum().item() == 0.0


def test_k3_kl_term() -> None:
    # logp = log 0.5, ref = log 0.25: delta = log 0.5 -> 0.5 - log 0.5 - 1
    kl = k3_kl(torch.tensor([math.log(0.5)]), torch.tensor([math.log(0.25)]))
    assert kl.item() == pytest.approx(0.5 + math.log(2) - 1, rel=1e-6)
    assert k3_kl(torch.tensor([-1.2]), torch.tensor([-1.2])).item() == 0.0
    # in the loss: ratio 1 and A = 0, so the loss is beta * KL
    logp = torch.tensor([[math.log(0.5)]])
    ref = torch.tensor([[math.log(0.25)]])
    out = dapo_loss(logp, logp, ref, torch.zeros(1), torch.ones(1, 1), DAPOSettings(beta=0.01))
    assert out.loss.item() == pytest.approx(0.01 * (0.5 + math.log(2) - 1), rel=1e-5)
    assert out.kl == pytest.approx(0.5 + math.log(2) - 1, rel=1e-5)
    with pytest.raises(ValueError, match="ref_logp"):
        dapo_loss(logp, logp, None, torch.zeros(1), torch.ones(1, 1))


def test_normalised_by_all_tokens_of_the_group() -> None:
    # trajectory 1 has 3 tokens (A = +1), trajectory 2 one token (A = -1, two padded);
    # ratio 1 everywhere: sum = 1 + 1 + 1 - 1 = 2 over 4 tokens -> loss -0.5
    # (a mean of per-trajectory means would give (1 - 1) / 2 = 0)
    logp = torch.full((2, 3), -1.0)
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    out = dapo_loss(logp, logp, None, torch.tensor([1.0, -1.0]), mask, DAPOSettings(beta=0))
    assert out.loss.item() == pytest.approx(-0.5)
    assert out.tokens == 4
    # padded positions never count, whatever their values
    noisy = logp.clone()
    noisy[1, 1:] = 5.0
    again = dapo_loss(noisy, logp, None, torch.tensor([1.0, -1.0]), mask, DAPOSettings(beta=0))
    assert again.loss.item() == pytest.approx(-0.5)


def test_all_equal_groups_are_dropped_until_the_batch_is_full() -> None:
    assert not group_is_informative([1.3, 1.3, 1.3])
    assert not group_is_informative([0.0])
    assert group_is_informative([1.3, 0.3])
    draws = iter([[0.0, 0.0], [1.0, 0.0], [1.8, 1.8], [0.3, 1.3], [1.0, 1.0]])
    batch = fill_batch(lambda: next(draws), group_is_informative, n_groups=2, max_draws=10)
    assert batch.groups == [[1.0, 0.0], [0.3, 1.3]]
    assert (batch.drawn, batch.dropped) == (4, 2)
    always = fill_batch(lambda: [1.0, 1.0], group_is_informative, n_groups=2, max_draws=5)
    assert always.groups == [] and always.drawn == 5  # bounded, never an endless loop
    with pytest.raises(ConfigError):
        fill_batch(lambda: [1.0], group_is_informative, n_groups=3, max_draws=2)


def test_groups_all_correct_or_all_wrong_are_dropped_by_default() -> None:
    from policies.training.rl import DAPOConfig, group_filter
    from policies.training.rollout import Trajectory

    def group(*outcomes: tuple[bool | None, float]) -> list[Trajectory]:
        return [Trajectory([], reward, {"correct": ok}) for ok, reward in outcomes]

    # all correct, rewards unequal through the timing term: DAPO's filter keeps it
    all_correct = group((True, 1.8), (True, 1.55), (True, 1.3))
    all_wrong = group((False, 0.3), (None, 0.0), (False, 0.3))
    mixed = group((True, 1.3), (False, 1.3))  # equal rewards, mixed outcomes
    assert group_has_mixed_outcomes([True, False]) and not group_has_mixed_outcomes([True])
    keep = group_filter(DAPOConfig())
    assert not keep(all_correct) and not keep(all_wrong) and keep(mixed)
    equal = group_filter(DAPOConfig(dynamic_filter="equal-reward"))
    assert equal(all_correct) and not equal(mixed)
    draws = iter([all_correct, all_wrong, mixed])
    batch = fill_batch(lambda: next(draws), keep, n_groups=1, max_draws=3)
    assert batch.groups == [mixed] and batch.dropped == 2


def test_soft_overlong_punishment_and_the_papers_token_cap() -> None:
    from policies.training.rl import DAPOConfig, shaped
    from policies.training.rollout import Trajectory

    assert overlong_penalty(3000, 4096, 1024) == 0.0
    assert overlong_penalty(3584, 4096, 1024) == pytest.approx(-0.5)  # half-way in the ramp
    assert overlong_penalty(4097, 4096, 1024) == -1.0
    cfg = DAPOConfig()
    assert cfg.episode.max_new_tokens == 4096 and cfg.overlong == "soft"
    long = Trajectory([], 1.3, {"correct": True}, reply_tokens=(200, 3584))
    assert shaped(long, cfg).reward == pytest.approx(0.8)
    cut = Trajectory([], 0.3, {}, reply_tokens=(4096,), truncated=True)
    assert shaped(cut, cfg).reward == pytest.approx(-0.7)
    assert shaped(long, DAPOConfig(overlong="none")).reward == 1.3
    with pytest.raises(ConfigError):
        DAPOConfig(dynamic_filter="rewards")


def test_train_rl_cli_defaults_are_the_papers() -> None:
    from video_env.cli import build_parser

    args = build_parser().parse_args(["train", "rl", "--model", "m", "--out", "o"])
    assert args.max_new_tokens == 4096
    assert (args.dynamic_filter, args.overlong, args.overlong_buffer) == (
        "correctness",
        "soft",
        1024,
    )


def test_train_rl_cli_passes_the_rollouts_decoding_to_dapo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import policies.training.rl as rl
    from video_env.cli import build_parser

    configs: list[rl.DAPOConfig] = []
    monkeypatch.setattr(rl, "train_rl", lambda model, samples, out, cfg: configs.append(cfg) or [])
    common = ["train", "rl", "--model", "m", "--out", "o", "--suite", "synth-tiny", "--limit", "1"]
    for flags in ([], ["--guided"], ["--format-guided"], ["--format-guided", "--score-guided"]):
        args = build_parser().parse_args([*common, *flags])
        assert args.func(args) == 0
    assert [(c.episode.guided, c.episode.format_guided, c.score_guided) for c in configs] == [
        (False, False, False),
        (True, False, False),
        (False, True, False),
        (False, True, True),
    ]
    args = build_parser().parse_args([*common, "--score-guided"])
    with pytest.raises(ConfigError, match="format_guided"):
        args.func(args)


def test_settings_are_the_papers_by_default() -> None:
    s = DAPOSettings()
    assert (s.eps_low, s.eps_high, s.beta) == (0.20, 0.28, 0.01)
    with pytest.raises(ConfigError):
        DAPOSettings(eps_low=1.5)


def test_a_runs_record_keeps_the_episodes_env_arguments_by_name_not_by_copy() -> None:
    """Env arguments may hold backends (locks, models): the record names them, copies none."""
    import threading

    from policies.training.rl import DAPOConfig, _settings

    config = DAPOConfig().with_episode(env_kwargs={"perception": threading.Lock()})
    record = json.loads(json.dumps(_settings(config)))
    assert record["episode"]["env_kwargs"] == ["perception"]
    assert record["loss"]["eps_high"] == 0.28 and record["steps"] == 100


def test_train_rl_cli_keeps_the_question_forms_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    import policies.training.rl as rl
    from video_env.cli import build_parser

    trained: list[list[VideoQA]] = []
    monkeypatch.setattr(
        rl, "train_rl", lambda model, samples, out, cfg: trained.append(samples) or []
    )
    common = ["train", "rl", "--model", "m", "--out", "o", "--suite", "synth-tiny"]
    for flags in ([], ["--forms", "mcq"], ["--forms", "open"], ["--forms", "mcq", "--limit", "2"]):
        args = build_parser().parse_args([*common, *flags])
        assert args.func(args) == 0
    both, mcq, open_, first_two = trained
    assert {s.options is None for s in both} == {True, False}
    assert mcq and all(s.options is not None for s in mcq)
    assert open_ and all(s.options is None for s in open_)
    assert len(mcq) + len(open_) == len(both)
    assert [s.id for s in first_two] == [s.id for s in mcq[:2]]
