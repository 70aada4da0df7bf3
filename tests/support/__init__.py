"""Code only the tests use, kept out of the runtime packages: a scalecodec registry as a second opinion on the
hand-written SCALE, dishonest collators, the naive processing order the engine's is checked against."""
