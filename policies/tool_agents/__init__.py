"""Today's tool-calling video agents as policies of the Tools env, and each preset's floor.

- :class:`VideoSeekPolicy` (``videoseek``): VideoSeek's think-then-call loop over
  overview / skim / focus on the ``videoseek`` preset;
- :class:`DVDPolicy` (``dvd``): Deep Video Discovery's ReAct loop over global browse, clip
  search and frame inspect on the ``dvd`` preset;
- :class:`ToolsUniformPolicy` (``tools-uniform[:PRESET]``) and :class:`ToolsRandomPolicy`
  (``tools-random[:PRESET]``): uniform and random valid calls for any preset.

The two agents run an OpenAI-compatible LLM (``--llm``) or, without one, a documented
offline heuristic (``videoseek[offline]``, ``dvd[offline]``).
"""

from policies.tool_agents.baselines import ToolsRandomPolicy, ToolsUniformPolicy
from policies.tool_agents.dvd import DVDPolicy
from policies.tool_agents.videoseek import VideoSeekPolicy

__all__ = ["DVDPolicy", "ToolsRandomPolicy", "ToolsUniformPolicy", "VideoSeekPolicy"]
