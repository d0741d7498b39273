"""Run a BERT ONNX graph's attention one sequence at a time: the same operators, the same
vectors, less memory traffic.

The exported attention core (scores = Q Kᵀ x scale + mask, softmax, x V) runs on the whole
batch at once: for 8 windows of ~142 word pieces its (batch, heads, L, L) score tensor is
~7.7 MB, written and read again by four operators in a row, well beyond a core's 1 MB L2.
`per_sequence_attention` wraps each layer's core in an ONNX `Scan` over the batch: the
same operators on one sequence's (heads, L, L) scores (~1 MB), which stay in cache between
them. The projections around it, and the int8 model's per-batch activation quantization,
are untouched, so every output is bit-identical to the plain graph's (checked against it
when the model is built, `pipelines.embedders.minilm_onnx_path`), in 8-10% fewer
CPU-seconds for the int8 MiniLM on LoCoMo windows (README)."""

from __future__ import annotations

from typing import Any

import numpy as np


def _producers(graph: Any) -> dict[str, Any]:
    return {out: node for node in graph.node for out in node.output}


def _perm(node: Any) -> list[int] | None:
    return next((list(a.ints) for a in node.attribute if a.name == "perm"), None)


def _constant(name: str, producers: dict[str, Any], initializers: dict[str, Any]) -> np.ndarray | None:
    from onnx import numpy_helper

    if name in initializers:
        return numpy_helper.to_array(initializers[name])
    node = producers.get(name)
    if node is not None and node.op_type == "Constant" and node.attribute:
        return numpy_helper.to_array(node.attribute[0].t)
    return None


def _match(softmax: Any, producers: dict[str, Any], consumers: dict[str, list[Any]],
           initializers: dict[str, Any]) -> dict[str, Any] | None:
    """The attention core around one Softmax, as the torch export writes it:
    Reshape(q) -> Transpose(0,2,1,3); Reshape(k) -> Transpose(0,2,3,1); MatMul -> Mul(scale)
    -> Add(mask) -> Softmax -> MatMul(Reshape(v) -> Transpose(0,2,1,3)) -> Transpose(0,2,1,3)
    -> Reshape. None when the graph differs."""
    def made_by(name: str, op: str) -> Any:
        node = producers.get(name)
        return node if node is not None and node.op_type == op else None

    add = made_by(softmax.input[0], "Add")
    mul = add and made_by(add.input[0], "Mul")
    scores = mul and made_by(mul.input[0], "MatMul")
    scale = mul and _constant(mul.input[1], producers, initializers)
    if scores is None or scale is None or scale.size != 1:
        return None
    q_t, k_t = made_by(scores.input[0], "Transpose"), made_by(scores.input[1], "Transpose")
    users = consumers.get(softmax.output[0], [])
    context = users[0] if len(users) == 1 and users[0].op_type == "MatMul" else None
    v_t = context and made_by(context.input[1], "Transpose")
    out_t = context and next(iter(consumers.get(context.output[0], [])), None)
    out_r = out_t and next(iter(consumers.get(out_t.output[0], [])), None)
    if not (q_t and k_t and v_t and out_t and out_r) or out_t.op_type != "Transpose" or out_r.op_type != "Reshape":
        return None
    if (_perm(q_t), _perm(k_t), _perm(v_t), _perm(out_t)) != ([0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3], [0, 2, 1, 3]):
        return None
    q, k, v = (made_by(t.input[0], "Reshape") for t in (q_t, k_t, v_t))
    if not (q and k and v):
        return None
    return {"q": q.input[0], "k": k.input[0], "v": v.input[0], "mask": add.input[1],
            "scale": float(scale.reshape(())), "out": out_r.output[0]}


def _body(name: str, heads: int, head_size: int, scale: float) -> Any:
    """One sequence's attention: q, k, v (L, heads x head_size), mask (broadcast to
    (heads, L, L)) -> (L, heads x head_size); the export's operators in its order."""
    from onnx import TensorProto, helper, numpy_helper

    def const(out: str, value: np.ndarray) -> Any:
        return helper.make_node("Constant", [], [out], value=numpy_helper.from_array(value))

    nodes = [
        const("split_heads", np.array([-1, heads, head_size], np.int64)),
        const("join_heads", np.array([-1, heads * head_size], np.int64)),
        const("scale", np.asarray(scale, np.float32)),
        helper.make_node("Reshape", ["q", "split_heads"], ["q_heads"]),
        helper.make_node("Transpose", ["q_heads"], ["q_t"], perm=[1, 0, 2]),
        helper.make_node("Reshape", ["k", "split_heads"], ["k_heads"]),
        helper.make_node("Transpose", ["k_heads"], ["k_t"], perm=[1, 2, 0]),
        helper.make_node("Reshape", ["v", "split_heads"], ["v_heads"]),
        helper.make_node("Transpose", ["v_heads"], ["v_t"], perm=[1, 0, 2]),
        helper.make_node("MatMul", ["q_t", "k_t"], ["scores"]),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
        helper.make_node("Add", ["scaled", "mask"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v_t"], ["context"]),
        helper.make_node("Transpose", ["context"], ["context_t"], perm=[1, 0, 2]),
        helper.make_node("Reshape", ["context_t", "join_heads"], ["out"]),
    ]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("q", "k", "v", "mask")]
    return helper.make_graph(nodes, name, inputs, [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])


def per_sequence_attention(model: Any, heads: int, hidden: int) -> int:
    """Rewrite `model` (an onnx ModelProto, in place): every attention core the export wrote
    (`_match`) becomes a Scan over the batch running `_body`; nodes left unused are dropped.
    Returns how many were rewritten (0: the graph is left as it was)."""
    from onnx import helper

    graph = model.graph
    producers = _producers(graph)
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    initializers = {t.name: t for t in graph.initializer}
    cores = [c for c in (_match(n, producers, consumers, initializers) for n in graph.node if n.op_type == "Softmax")
             if c is not None]
    if not cores:
        return 0
    scans = [helper.make_node("Scan", [c["q"], c["k"], c["v"], c["mask"]], [c["out"]], num_scan_inputs=4,
                              body=_body(f"attention_{i}", heads, hidden // heads, c["scale"]),
                              name=f"per_sequence_attention_{i}")
             for i, c in enumerate(cores)]
    replaced = {c["out"] for c in cores}
    nodes = [n for n in graph.node if not set(n.output) & replaced] + scans
    wanted = {o.name for o in graph.output}
    while True:  # drop what nothing reads any more (the batched cores)
        read = {name for n in nodes for name in n.input} | wanted
        live = [n for n in nodes if any(out in read for out in n.output)]
        if len(live) == len(nodes):
            break
        nodes = live
    ready = {i.name for i in graph.input} | set(initializers) | {""}
    ordered: list[Any] = []
    while nodes:  # topological order (the scans go where their inputs are ready)
        later = []
        for n in nodes:
            if all(name in ready for name in n.input):
                ordered.append(n)
                ready.update(n.output)
            else:
                later.append(n)
        if len(later) == len(nodes):
            raise ValueError("per_sequence_attention: the rewritten graph has unresolved inputs")
        nodes = later
    del graph.node[:]
    graph.node.extend(ordered)
    read = {name for n in ordered for name in n.input}
    kept = [t for t in graph.initializer if t.name in read]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return len(cores)
