"""The online recall service (Litestar): app factory, controllers, snapshot holder with hot
swap, inbox delta, memory.* tool dispatcher and the in-process chat middleware."""
