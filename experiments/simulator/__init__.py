"""Is the simulator faithful? Validation against pixel perceptions, and fidelity effects."""
