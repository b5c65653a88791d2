"""Node-level checks of the graphs captured from the project's own tasks (tests/tasks/*.py)."""
from conftest import GOOD_TASKS, RANDOM_TASKS, ops_of


def test_every_good_task_captures(batch):
    for path in GOOD_TASKS:
        line = batch.lines[path.stem]
        assert line["status"] == "captured", line
        assert line["nodes"] == len(batch.graph(path.stem)["nodes"])


def test_a_task_random_in_training_mode_is_refused(batch):
    for task in RANDOM_TASKS:
        assert batch.lines[task]["status"] == "failed", batch.lines[task]


def test_mlp_is_three_addmm_and_two_relu(batch):
    ops = ops_of(batch.graph("mlp"))
    assert ops.get("aten.addmm.default", 0) + ops.get("aten.mm.default", 0) == 3
    assert ops["aten.relu.default"] == 2
    graph = batch.graph("mlp")
    assert [param["name"] for param in graph["params"]] == [
        "network.0.weight", "network.0.bias", "network.2.weight", "network.2.bias",
        "network.4.weight", "network.4.bias"]
    assert all(param["kind"] == "parameter" for param in graph["params"])


def test_nodes_carry_their_module(batch):
    graph = batch.graph("mlp")
    addmm = [node for node in graph["nodes"] if node["op"] == "aten.addmm.default"]
    assert [node["module"] for node in addmm] == ["network.0", "network.2", "network.4"]
    assert {node["module_type"] for node in addmm} == {"torch.nn.modules.linear.Linear"}
    relu = batch.graph("softmax")["nodes"][0]
    assert (relu["module"], relu["module_type"]) == ("", "")  # an op of the root module


def test_lstm_stays_one_node(batch):
    graph = batch.graph("lstm")
    ops = ops_of(graph)
    assert ops["aten.lstm.input"] == 1
    assert len(graph["nodes"]) < 100
    lstm = next(node for node in graph["nodes"] if node["op"] == "aten.lstm.input")
    # output (batch_first: a (seq, batch, hidden) buffer viewed as (batch, seq, hidden)), h_n, c_n.
    assert [out["shape"] for out in lstm["outputs"]] == [[4, 64, 32], [2, 4, 32], [2, 4, 32]]
    assert lstm["outputs"][0]["strides"] == [32, 128, 1]


def test_lstm_initial_states_become_random_inputs(batch):
    graph = batch.graph("lstm")
    random_inputs = [item for item in graph["inputs"] if item["kind"] == "random"]
    assert [(item["name"], item["shape"], item["distribution"], item["source_op"]) for item in random_inputs] == [
        ("randn", [2, 4, 32], "randn", "aten.randn.default"),
        ("randn_1", [2, 4, 32], "randn", "aten.randn.default")]
    lstm = next(node for node in graph["nodes"] if node["op"] == "aten.lstm.input")
    assert lstm["args"][1] == [{"input": 1}, {"input": 2}]
    assert not any(node["op"].startswith("aten.randn") for node in graph["nodes"])


def test_random_in_forward_is_an_input(batch):
    graph = batch.graph("random_in_forward")
    assert graph["inputs"][0]["kind"] == "user"
    noise = [item for item in graph["inputs"] if item["kind"] == "random"]
    assert len(noise) == 1
    assert noise[0]["distribution"] == "randn"
    assert noise[0]["source_op"] == "aten.randn.default"
    assert noise[0]["shape"] == [16, 24]
    assert batch.capture_json("random_in_forward")["random_inputs"] == 1


def test_dropout_mask_is_a_bool_random_input(batch):
    graph = batch.graph("dropout_train")
    mask = graph["inputs"][1]
    assert (mask["kind"], mask["dtype"], mask["distribution"], mask["source_op"]) == (
        "random", "bool", "bernoulli:0.75", "aten.native_dropout.default")
    assert "aten.native_dropout.default" not in ops_of(graph)
    scaled = graph["nodes"][-1]
    assert scaled["op"] == "aten.mul.Tensor" and scaled["args"][1] == 1 / 0.75
    assert graph["outputs"] == [{"node": scaled["id"], "out": 0}]


def test_unused_output_has_two_outputs_and_no_dead_code(batch):
    graph = batch.graph("unused_output")
    assert len(graph["outputs"]) == 2
    ops = ops_of(graph)
    assert "aten.exp.default" not in ops and "aten.sum.default" not in ops
    assert ops["aten.relu.default"] == 1 and ops["aten.sigmoid.default"] == 1


def test_conv_bn_relu_training_uses_batch_statistics(batch):
    graph = batch.graph("conv_bn_relu")
    assert graph["training"] is True
    bn = [node for node in graph["nodes"] if "batch_norm" in node["op"]]
    assert [node["op"] for node in bn] == ["aten._native_batch_norm_legit_functional.default"]
    assert bn[0]["args"][5] is True  # training: normalise with the batch's mean and variance
    assert bn[0]["module"] == "bn"
    kinds = {param["name"]: param["kind"] for param in graph["params"]}
    assert kinds["bn.running_mean"] == kinds["bn.running_var"] == "buffer"
    assert kinds["conv.weight"] == "parameter"
    # The buffers forward updates are state updates: the running statistics are outputs 3 and 4
    # of the batch norm, the batch counter one add.
    updates = {u["param"]: u["value"] for u in graph["state_updates"]}
    assert updates["bn.running_mean"] == {"node": bn[0]["id"], "out": 3}
    assert updates["bn.running_var"] == {"node": bn[0]["id"], "out": 4}
    counter = next(n for n in graph["nodes"] if n["id"] == updates["bn.num_batches_tracked"]["node"])
    assert counter["op"] == "aten.add.Tensor" and counter["args"] == [
        {"param": "bn.num_batches_tracked"}, 1]


def test_cumulative_batch_norm_exports_its_first_call_momentum(batch):
    graph = batch.graph("plan_bn_running_stats")
    momenta = [node["args"][6] for node in graph["nodes"] if "batch_norm" in node["op"]]
    assert momenta == [0.3, 1.0]
    assert len(graph["state_updates"]) == 6
    assert any("momentum=None" in note for note in batch.capture_json("plan_bn_running_stats")["notes"])


def test_sdpa_is_kept_whole(batch):
    graph = batch.graph("sdpa_attention")
    ops = ops_of(graph)
    assert ops["aten.scaled_dot_product_attention.default"] == 1
    assert not any("_softmax" in op or op == "aten.bmm.default" for op in ops)
    sdpa = next(node for node in graph["nodes"] if node["op"] == "aten.scaled_dot_product_attention.default")
    assert sdpa["args"][5] is True  # is_causal


def test_logsumexp_is_kept_whole(batch):
    ops = ops_of(batch.graph("plan_logsumexp_channels"))
    assert ops["aten.logsumexp.default"] == 1
    assert "aten.amax.default" not in ops and "aten.exp.default" not in ops


def test_mish_is_kept_whole(batch):
    ops = ops_of(batch.graph("mish_kept_whole"))
    assert ops["aten.mish.default"] == 1
    # The softplus beside it decomposes (one exp, one log1p): the mish added none.
    assert "aten.softplus.default" not in ops
    assert ops["aten.exp.default"] == 1 and ops["aten.log1p.default"] == 1
    assert "aten.tanh.default" not in ops


def test_causal_attention_masks_with_minus_infinity(batch):
    graph = batch.graph("causal_attention")
    ops = ops_of(graph)
    assert ops["aten.bmm.default"] == 2
    assert ops["aten._softmax.default"] == 1
    assert ops["aten.addmm.default"] == 4
    masking = [node for node in graph["nodes"] if node["op"] in ("aten.where.self", "aten.masked_fill.Scalar",
                                                                   "aten.scalar_tensor.default")]
    assert masking
    assert {"float": "-inf"} in [arg for node in masking for arg in node["args"]]
    assert {param["name"]: param["kind"] for param in graph["params"]}["mask"] == "buffer"


def test_layernorm_softmax_pooling_cat(batch):
    assert ops_of(batch.graph("layernorm")) == {"aten.native_layer_norm.default": 1}
    assert ops_of(batch.graph("softmax")) == {"aten._softmax.default": 1}
    pooling = ops_of(batch.graph("pooling"))
    assert pooling == {"aten.max_pool2d_with_indices.default": 1, "aten.avg_pool2d.default": 1}
    graph = batch.graph("cat")
    cat = next(node for node in graph["nodes"] if node["op"] == "aten.cat.default")
    relu, tanh = (next(n["id"] for n in graph["nodes"] if n["op"] == op)
                  for op in ("aten.relu.default", "aten.tanh.default"))
    assert cat["args"] == [[{"node": relu, "out": 0}, {"node": tanh, "out": 0}], 1]
    assert cat["outputs"][0]["shape"] == [32, 96]


def test_mutated_tensor_attribute_becomes_a_buffer(batch):
    record = batch.capture_json("mutated_attribute")
    assert record["registered_buffers"] == ["state"]
    graph = batch.graph("mutated_attribute")
    assert {param["name"]: param["kind"] for param in graph["params"]}["state"] == "buffer"
    assert [item["name"] for item in graph["inputs"]] == ["x", "initial_state"]


def test_user_input_distributions(batch):
    assert batch.graph("mlp")["inputs"][0]["distribution"] == "randn"
    for path in GOOD_TASKS:
        for item in batch.graph(path.stem)["inputs"]:
            assert item["distribution"] in ("rand", "randn", "fixed", "unknown") or item["distribution"].startswith(
                ("randint:", "bernoulli:")), (path.stem, item)


def test_task_record(batch):
    task = batch.graph("mlp")["task"]
    assert task["name"] == "mlp" and task["file"] == "mlp.py" and len(task["sha256"]) == 64
    assert task["constants"] == {"batch_size": 64, "input_size": 512, "hidden_sizes": [1024, 768],
                                 "output_size": 256}


def test_constant_ranges_fold_into_constant_params(batch):
    # torch.tril's mask: two aranges inside forward become constant params the program loads.
    graph = batch.graph("plan_triangular_matmul")
    assert not any(node["op"].startswith("aten.arange") for node in graph["nodes"])
    ranges = [param for param in graph["params"] if param["name"].startswith("_range_")]
    assert [(p["kind"], p["shape"], p["dtype"]) for p in ranges] == [
        ("constant", [160], "int64"), ("constant", [192], "int64")]
    from safetensors.torch import load_file

    weights = load_file(str(batch.dir("plan_triangular_matmul") / "weights.safetensors"))
    assert weights[ranges[0]["name"]].tolist() == list(range(160))
    assert weights[ranges[1]["name"]].tolist() == list(range(192))
    notes = batch.capture_json("plan_triangular_matmul")["notes"]
    assert any("folded into the constant _range_" in note for note in notes), notes
