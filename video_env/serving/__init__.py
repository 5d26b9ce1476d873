"""The environments behind a network address: an OpenEnv server, its client, the wire format.

RL engines that run their environments elsewhere (TRL with OpenEnv, verifiers, verl's
agent loop) reach a video-env environment through OpenEnv's server: one process holds
many sessions, each its own environment, driven over a WebSocket. The modules:

- :mod:`video_env.serving.wire`: the typed action, observation and state models of the
  three environments, and the encoding of observations (frames as images).
- :mod:`video_env.serving.environment`: a video-env environment as an OpenEnv
  ``Environment``.
- :mod:`video_env.serving.server`: the app (OpenEnv's routes), request limits, running
  it (``video-env serve``).
- :mod:`video_env.serving.sessions`: whose a session is (the connection that opened it),
  what counts against the cap, when unused ones go; :mod:`video_env.serving.guard`: the
  middleware that says which connection a request is and checks the token;
  :mod:`video_env.serving.auth`: the optional bearer token (no OpenEnv).
- :mod:`video_env.serving.client`: OpenEnv's client for it, and :class:`RemoteVideoEnv`,
  the same Gymnasium-style calls as the in-process environment.
- :mod:`video_env.serving.images`: frames as base64 image ``data:`` URLs (no OpenEnv).
- :mod:`video_env.serving.testing`: a loopback server in a thread or a child process.

Everything here needs the ``openenv`` extra; importing this package does not.
"""
