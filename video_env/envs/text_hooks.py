"""The hooks through which an env is shown to a text (or vision-chat) agent.

Every env kind implements them (:class:`~video_env.envs.base.VideoQAEnv` inherits
:class:`TextAgentHooks`), so the adapters that put an env in front of a language model
(the ``TextActions`` wrapper, the served env's text actions, the verifiers and lmms-eval
tasks, TRL's text-tool environment) need nothing per kind: they parse a reply with
:meth:`~TextAgentHooks.text_action_set`, write the prompt with
:meth:`~TextAgentHooks.system_prompt`, and show each observation as
:meth:`~TextAgentHooks.observation_text` and :meth:`~TextAgentHooks.observation_images`.
They are instance methods: an env may choose its text actions and rendering when it is
built (a preset).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from video_env.actions.base import ActionSet

__all__ = ["SYSTEM_PROMPT", "TextAgentHooks"]

#: The system prompt of a text agent (:meth:`TextAgentHooks.system_prompt`): the action
#: set's documentation and one example action.
SYSTEM_PROMPT = (
    "You answer a question about a long video you cannot watch directly; you explore it "
    "with actions, one per reply.\n{actions}\nReply with exactly one action, for example: "
    "{example}"
)


class TextAgentHooks:
    """What a text agent needs of an env: its text actions and its observations as text."""

    def text_action_set(self) -> ActionSet[Any]:
        """The parser of this env's text actions.

        Its ``describe()`` and ``example()`` are the prompt's instructions
        (:meth:`system_prompt`); its ``parse(text)`` turns a reply into an action.

        Raises:
            NotImplementedError: If the env kind implements no text actions.
        """
        raise NotImplementedError(f"{type(self).__name__} implements no text_action_set()")

    def observation_text(self, observation: dict[str, Any]) -> str:
        """``observation`` as text, what a text-only agent reads each turn.

        It names the question (and options) and ends with the last reply's error, if any.

        Args:
            observation: An observation this env returned.

        Raises:
            NotImplementedError: If the env kind implements no text rendering.
        """
        raise NotImplementedError(f"{type(self).__name__} implements no observation_text()")

    def observation_images(self, observation: dict[str, Any]) -> list[np.ndarray]:
        """The frames to show a vision model with :meth:`observation_text` (none by default).

        Args:
            observation: An observation this env returned.

        Returns:
            ``uint8[H, W, 3]`` frames, in the order shown (padding cropped away).
        """
        del observation
        return []

    def system_prompt(self) -> str:
        """A text agent's system prompt: :data:`SYSTEM_PROMPT` with this env's action set."""
        actions = self.text_action_set()
        return SYSTEM_PROMPT.format(actions=actions.describe(), example=actions.example())
