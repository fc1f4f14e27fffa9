from .optimizer import SGD, Adam, Optimizer  # noqa: F401
