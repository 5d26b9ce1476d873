"""A scripted teacher for synthetic videos that writes only what each turn's frames show.

:class:`FrameScriptedTeacher` is not a model and must never be evaluated as a policy. It
plays VideoScout's Think-Act format on synthetic videos with *privileged pacing*: it
knows where the asked needle is, and uses that only to choose its actions (skim at 4x or
2x while the evidence is far ahead, 1x as it comes near, rewatch a chunk the fast frames
skipped over, answer when a frame shows it). Everything it *writes* — reasoning and notes
— is about the frames of the turn: the scene each stretch shows and every needle a frame
shows (its caption statement, e.g. "a red umbrella"), read off the world the frames are
rendered from. Its answer window spans the frames that showed the evidence. So a student
trained on its turns learns to describe frames, to note what it saw, and to answer from
what is on screen; where the teacher's pacing rests on knowledge the frames do not give,
the student can only learn its average (docs/training.md). With ``steady_speed`` the
pacing is not privileged: one speed every turn until a frame shows the needle, and a
multiple-choice question whose needle no frame showed by the video's end is guessed there
(option ``attempt``, as a blind question's; :attr:`FrameScriptedTeacher.blind` says so).

With ``guess_share`` > 0 (``scenes`` or ``lead`` style) a share of the multiple-choice questions
is played *blind*, as a student that cannot spot the needle plays them: the teacher skims
at a steady 2x or 4x, writes only the scenes (true of the frames whether or not one shows
the needle; it does not look for it), and at the window that reaches the last chunk
answers with a guess — option ``attempt`` of the question, so the distiller's answer
verification keeps the try whose guess was right (it needs as many tries as options).
Those episodes show the state no sighted episode shows: the end of the video, where only
``answer`` is legal, answered with the window watched last. The distiller records no
reference chunk for them (:attr:`FrameScriptedTeacher.blind`).

Where a turn's window lies is read from the prompt's window line ("chunks 3 to 6"), as
a model teacher reads it; without one (a bare test message), from the frame times.

Compare :class:`~policies.training.teachers.GroundTruthScriptedTeacher`, whose thoughts
name the evidence window outright (a pipeline check, not data to learn from).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np

from experiments.pixel_models.vlm_checkpoint import NOT_VISIBLE
from experiments.pixel_models.vlm_data import head_noun
from policies.training.teachers import frame_times, scripted_completion
from video_env._seeding import stable_seed
from video_env.backends.base import VisionMessage
from video_env.backends.llm.base import Completion
from video_env.envs.pacing_rules import PacingRules
from video_env.errors import ConfigError
from video_env.metrics.cost import Cost
from video_env.synth.elements import Needle
from video_env.synth.world import SynthVideo
from video_env.types import OPTION_LETTERS, Interval, VideoQA

__all__ = ["SCENE_STYLES", "TEACHER_STYLES", "FrameScriptedTeacher", "TeacherStyle", "describe"]

#: The styles whose words name the scenes and the asked needle alone (blind play allowed).
SCENE_STYLES = ("scenes", "lead")

#: How the teacher writes: ``timestamps`` (scenes' stretches, when needles were seen, how
#: far it has watched), ``plain`` (the same without times), ``terse`` (scene names and
#: the needles seen, a few words per turn: the shortest replies, for the tiniest students)
#: or ``scenes`` (as terse, but its thoughts and notes name the scenes alone and the asked
#: needle once a frame shows it: nothing a student that cannot yet tell the other needles
#: apart would have to guess, and notes that grow only with the scenes) or ``lead`` (as
#: scenes, but an answer's thought opens with the answer: ``<think>C (pink): I see a pink
#: balloon. Living-room.``, so a student writes its letter right after ``<think>``, a
#: fixed place a few tokens from where the pixel VLM reads its own MCQ letter).
TeacherStyle = Literal["timestamps", "plain", "terse", "scenes", "lead"]
TEACHER_STYLES: tuple[str, ...] = get_args(TeacherStyle)


class FrameScriptedTeacher:
    """A scripted :class:`VisionChat` teacher for synthetic videos (see the module docs).

    Args:
        rules: The Pacing env's rules (its chunks), as the episodes are played with.
        notes_kept: How many of the latest needles seen the notes keep.
        style: How it writes (:data:`TeacherStyle`): with times, ``plain`` (what the
            frames show alone — easier for a tiny student, which copies numbers poorly) or
            ``terse`` (a few words a turn: fewer tokens for a tiny student to get wrong)
            or ``scenes`` (terse, naming the scenes and the asked needle only) or ``lead``
            (scenes, with an answer's thought opening with the answer).
        guess_share: Share of the multiple-choice questions played blind (see the module
            docs), chosen per question by a stable hash of its id; 0 plays none. Needs
            a style of :data:`SCENE_STYLES`, whose words never name another needle.
        steady_speed: 0 for privileged pacing; else watch on at this speed every turn
            until a frame shows the asked needle (no privileged speed choice and no
            rewatch), pacing a student can copy from what it sees. A needle the frames
            skip over is guessed at the video's end on a multiple-choice question (option
            ``attempt``: answer verification keeps the right guess) and left unanswered on
            an open one (verification drops it).

    Raises:
        ConfigError: On an unknown style, a share outside [0, 1], a share with a style
            outside :data:`SCENE_STYLES`, or a steady speed the rules lack.
    """

    name = "frame-scripted-teacher"
    simulated = True

    def __init__(
        self,
        rules: PacingRules | None = None,
        notes_kept: int = 6,
        style: TeacherStyle = "timestamps",
        guess_share: float = 0.0,
        steady_speed: int = 0,
    ) -> None:
        if style not in TEACHER_STYLES:
            raise ConfigError(f"unknown teacher style {style!r}; one of {TEACHER_STYLES}")
        if not 0.0 <= guess_share <= 1.0:
            raise ConfigError(f"guess_share must lie in [0, 1], got {guess_share}")
        if guess_share and style not in SCENE_STYLES:
            raise ConfigError(
                f"guess_share needs a style of {SCENE_STYLES}: other styles name every "
                "needle a frame shows, which a blind turn must not"
            )
        self.guess_share = guess_share
        self.rules = rules or PacingRules()
        if steady_speed and steady_speed not in self.rules.speeds:
            raise ConfigError(
                f"steady_speed {steady_speed} is not a speed of the rules "
                f"({sorted(self.rules.speeds)})"
            )
        self.steady_speed = steady_speed
        self.notes_kept = notes_kept
        self.style = style
        self.usage = Cost()
        self._sample: VideoQA | None = None
        self._asked: Needle | None = None
        self._notes: dict[str, str] = {}  # needle id -> note, in the order first seen
        self._watched = 0.0
        self._blind: int | None = None  # a blind question's steady speed
        self._attempt = 0
        self._guessed = False  # a steady episode guessed at the end (its frames missed the needle)

    def begin_question(self, sample: VideoQA, attempt: int) -> None:
        """Take the next episode's question (the distiller calls this).

        ``attempt`` picks a blind question's guess (option ``attempt`` modulo their number).

        Raises:
            ConfigError: If the sample is not a synthetic video's needle question.
        """
        video = sample.video
        asked = video.needle_for(sample.question) if isinstance(video, SynthVideo) else None
        if asked is None:
            raise ConfigError(f"{sample.id}: the frame teacher needs a synthetic video's question")
        self._sample, self._asked = sample, asked
        self._notes = {}
        self._watched = 0.0
        self._blind = None
        self._attempt, self._guessed = attempt, False
        draw = stable_seed("guess", sample.id) % 10_000 / 10_000
        if sample.options and draw < self.guess_share:
            speed = 4 if stable_seed("guess-speed", sample.id) % 2 else 2
            self._blind = speed

    @property
    def blind(self) -> bool:
        """Whether the current question is played blind or its answer was a guess."""
        return self._blind is not None or self._guessed

    def chat(
        self,
        messages: Sequence[VisionMessage],
        *,
        max_new_tokens: int = 512,
        temperature: float = 0.0,
    ) -> Completion:
        """The next Think-Act reply for the window shown in ``messages``."""
        sample, asked = self._sample, self._asked
        if sample is None or asked is None:
            raise ConfigError("call begin_question(sample, attempt) before each episode")
        video = sample.video
        assert isinstance(video, SynthVideo)
        times = [t for m in messages for t in frame_times(m)]
        chunks = self.rules.chunks(video.duration)
        span = _window_span(messages) or (
            _chunk_of(chunks, min(times)),
            _chunk_of(chunks, max(times)),
        )
        seen = describe(video, times, self.style)
        shows = [t for t in times if asked.visible(t)]
        memory = self._remember(video, times)
        if self._blind is not None:
            text = self._blind_turn(sample, seen, times, memory, span[1] >= len(chunks))
        elif shows:
            text = self._answer(sample, asked, seen, shows, times, memory)
        elif self.steady_speed and sample.options and span[1] >= len(chunks):
            self._guessed = True  # watched to the end at a steady pace: the needle went by
            text = self._guess(sample, seen, times, memory)
        else:
            thought, action = self._pace(chunks, asked, seen, span)
            text = f"<think>{thought}</think><memory>{memory}</memory><action>{action}</action>"
        self.usage = self.usage + Cost(llm_calls=1)
        return scripted_completion(self.name, text)

    def _remember(self, video: SynthVideo, times: list[float]) -> str:
        """The notes: how far it has watched, and the latest needles its frames showed."""
        timed = self.style == "timestamps"
        self._watched = max(self._watched, max(times, default=0.0))
        if self.style in SCENE_STYLES:
            for t in sorted(times):
                name = video.scene_at(t).style.name
                self._notes.setdefault(name, name)
            return f"Seen: {', '.join(list(self._notes.values())[-self.notes_kept :])}."
        for needle, hits in needles_shown(video, times):
            when = f" at {min(hits):.0f} s" if timed else ""
            self._notes.setdefault(needle.id, f"{needle.statement}{when}.")
        nothing = "nothing." if self.style == "terse" else "nothing to note yet."
        seen = " ".join(list(self._notes.values())[-self.notes_kept :]) or nothing
        if not timed:
            return f"Seen: {seen}"
        return f"Watched up to {self._watched:.0f} s. Seen: {seen}"

    def _answer(
        self,
        sample: VideoQA,
        asked: Needle,
        seen: str,
        shows: list[float],
        times: list[float],
        memory: str,
    ) -> str:
        gap = (max(times) - min(times)) / max(1, len(times) - 1)
        window = Interval(max(0.0, min(shows) - gap / 2), max(shows) + gap / 2)
        if sample.options:
            letter = OPTION_LETTERS[sample.options.index(asked.fact)]
            reply, said = letter, f"{letter} ({asked.fact})"
        else:
            reply = said = asked.fact
        if self.style == "terse":
            thought = f"{seen} Answer: {said}."
        elif self.style == "scenes":
            thought = f"{seen} I see {asked.statement}. Answer: {said}."
        elif self.style == "lead":
            thought = f"{said}: I see {asked.statement}. {seen}"
        else:
            thought = (
                f"{seen} {_capital(asked.statement)} answers the question: the answer is {said}."
            )
        return (
            f"<think>{thought}</think><memory>{memory}</memory>"
            f'<action>answer("{reply}", [{window.start:.0f}, {window.end:.0f}])</action>'
        )

    def _blind_turn(
        self, sample: VideoQA, seen: str, times: list[float], memory: str, at_end: bool
    ) -> str:
        """A blind question's turn (``scenes`` style): skim on; guess once the end is shown."""
        assert self._blind is not None and sample.options
        speed = self._blind
        if not at_end:
            return (
                f"<think>{seen} Skim.</think><memory>{memory}</memory>"
                f"<action>speed({speed}x)</action>"
            )
        return self._guess(sample, seen, times, memory)

    def _guess(self, sample: VideoQA, seen: str, times: list[float], memory: str) -> str:
        """The last turn of an episode whose frames never showed the needle: option ``attempt``."""
        assert sample.options
        option = self._attempt % len(sample.options)
        letter = OPTION_LETTERS[option]
        said = f"{letter} ({sample.options[option]})"
        thought = (
            f"{said}? A guess at the end of the video. {seen}"
            if self.style == "lead"
            else f"{seen} End of the video. Guess: {said}."
        )
        return (
            f"<think>{thought}</think>"
            f"<memory>{memory}</memory>"
            f'<action>answer("{letter}", [{min(times):.0f}, {max(times):.0f}])</action>'
        )

    def _pace(
        self, chunks: Sequence[Interval], asked: Needle, seen: str, span: tuple[int, int]
    ) -> tuple[str, str]:
        """The turn's reasoning and action when no frame shows the asked needle."""
        first, last = span
        target = _chunk_of(chunks, (asked.start + asked.end) / 2)
        terse = self.style in ("terse", *SCENE_STYLES)
        nothing = (
            f"No {head_noun(asked.carrier)}."
            if terse
            else f"Nothing in these frames answers the question about {asked.carrier}."
        )
        rewatch = not self.steady_speed  # a steady pace never looks back
        if rewatch and first <= target <= last and last > first:
            again = (
                f"Too fast: chunk {target} again."
                if terse
                else f"The frames went by fast, so I look at chunk {target} again at full speed."
            )
            return f"{seen} {nothing} {again}", f"rewatch({target})"
        if last >= len(chunks):  # the evidence went by unseen: the episode will be rejected
            return f"{seen} {nothing}", f'answer("{NOT_VISIBLE}", [0, 0])'
        ahead = target - last
        speed = self.steady_speed or (4 if ahead > 4 else 2 if ahead > 2 else 1)
        if terse:
            pace = "Skim." if speed > 1 else "Closer."
        else:
            pace = "I skim on." if speed > 1 else "I watch the next chunk closely."
        return f"{seen} {nothing} {pace}", f"speed({speed}x)"


def describe(video: SynthVideo, times: Sequence[float], style: TeacherStyle = "timestamps") -> str:
    """What frames at ``times`` of ``video`` show: each scene's stretch and every needle seen.

    E.g. ``"0-28 s: a green park with benches. At 12 s: a red umbrella."``; ``plain``:
    ``"The frames show a green park with benches. I see a red umbrella."``; ``terse``:
    ``"Park. I see a red umbrella."``; ``scenes``: ``"Park."`` (the scenes alone).
    """
    if not times:
        return "No frames."
    shown = needles_shown(video, times)
    sights = [f"I see {needle.statement}." for needle, _ in shown]
    if style in ("terse", *SCENE_STYLES):
        names = dict.fromkeys(video.scene_at(t).style.name for t in sorted(times))
        return " ".join(
            [f"{_capital(', then '.join(names))}.", *(sights if style == "terse" else [])]
        )
    if style == "plain":
        scenes = dict.fromkeys(video.scene_at(t).description for t in sorted(times))
        return " ".join([f"The frames show {' then '.join(scenes)}.", *sights])
    parts: list[str] = []
    stretch: list[float] = []
    for t in sorted(times):
        if stretch and video.scene_at(t) is not video.scene_at(stretch[0]):
            parts.append(_stretch(video, stretch))
            stretch = []
        stretch.append(t)
    parts.append(_stretch(video, stretch))
    for needle, hits in shown:
        when = f"{min(hits):.0f} s" if len(hits) == 1 else f"{min(hits):.0f}-{max(hits):.0f} s"
        parts.append(f"At {when}: {needle.statement}.")
    return " ".join(parts)


def needles_shown(video: SynthVideo, times: Sequence[float]) -> list[tuple[Needle, list[float]]]:
    """Each needle of ``video`` that a frame at ``times`` shows, with those frames' times."""
    shown = [(n, [t for t in times if n.visible(t)]) for n in video.needles]
    return [(n, hits) for n, hits in shown if hits]


def _stretch(video: SynthVideo, times: list[float]) -> str:
    return f"{times[0]:.0f}-{times[-1]:.0f} s: {video.scene_at(times[0]).description}."


#: The window line of VideoScout's prompt (``prompts/videoscout/window.txt``).
_WINDOW = re.compile(r"chunks (\d+) to (\d+) \(")


def _window_span(messages: Sequence[VisionMessage]) -> tuple[int, int] | None:
    """The 1-based first and last chunk the latest window line names (``None``: none)."""
    for message in reversed(messages):
        content = message.get("content", "")
        texts = [content] if isinstance(content, str) else content
        for text in reversed([t for t in texts if isinstance(t, str)]):
            match = _WINDOW.search(text)
            if match:
                return int(match.group(1)), int(match.group(2))
    return None


def _chunk_of(chunks: Sequence[Interval], t: float) -> int:
    """The 1-based chunk holding ``t``."""
    starts = np.array([c.start for c in chunks])
    return int(np.searchsorted(starts, t, side="right"))


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
