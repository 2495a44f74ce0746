"""The zoo: real training steps compiled for real TPUs (frontdoor/build_zoo.py).

Each module gives `program(size, topology, mesh) -> Program` and SIZES.
"""
