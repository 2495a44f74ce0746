"""One row's training step compiled by MaxText's own code (maxtext 0.2.4,
pinned in frontdoor/requirements-maxtext.txt; its .venv-maxtext runs this):
the row's flags on MaxText's base.yml, then train_compile's own functions
(get_topology_mesh, get_shaped_inputs, get_functional_train_with_signature,
jit_and_compile), as `python -m maxtext.trainers.pre_train.train_compile`
does. A run with flash attention gets MaxText's splash attention from
tokamax (use_tokamax_splash): the same Pallas kernels as jax's, whose
pallas_calls declare their cost (FLOPs, transcendentals, bytes), which is
what tpusim costs a Mosaic kernel by; the others attention=dot_product.
"""

from __future__ import annotations

import os
import pathlib
import tempfile
from typing import Any

from frontdoor.step_rows import AXES, Step, flash

os.environ.setdefault("DECOUPLE_GCLOUD", "TRUE")   # no Google Cloud clients

# other_settings keys passed to MaxText as they are (the row's flags).
PASSED = ("remat_policy", "decoder_layer_input", "query_proj", "key_proj",
          "value_proj", "out_proj", "mlpwi", "mlpwo", "context", "weight_dtype",
          "dtype", "quantization", "megablox", "sparse_matmul", "capacity_factor",
          "use_iota_embed", "num_vocab_tiling", "scan_layers",
          "sa_block_q", "sa_block_kv", "sa_block_kv_compute", "sa_block_q_dkv",
          "sa_block_kv_dkv", "sa_block_kv_dkv_compute", "sa_block_q_dq",
          "sa_block_kv_dq", "sa_use_fused_bwd_kernel",
          "allow_split_physical_axes", "custom_mesh")


def flags(s: Step, out: str) -> list[str]:
    """MaxText's command line for the row."""
    import maxtext

    base = pathlib.Path(maxtext.__file__).parent / "configs" / "base.yml"
    argv = ["train_compile", str(base), f"run_name={s.id}",
            f"base_output_directory={out}", "enable_checkpointing=false",
            "dataset_type=synthetic",
            f"compile_topology={s.maxtext_topology}",
            f"compile_topology_num_slices={s.slices}",
            f"per_device_batch_size={s.global_batch / s.chips:g}",
            f"max_target_length={s.seq}", "override_model_config=True"]
    argv += (["attention=flash", "use_tokamax_splash=true"] if flash(s)
             else ["attention=dot_product"])
    for axis in AXES:
        argv += [f"ici_{axis}_parallelism={s.ici[axis]}",
                 f"dcn_{axis}_parallelism={s.dcn[axis]}"]
    if s.model_name:
        argv.append(f"model_name={s.model_name}")
    else:   # MaxText's 2023 base.yml model: the default (parallel) block
        argv += ["decoder_block=default", f"base_emb_dim={s.d_model}",
                 f"base_num_query_heads={s.heads}", f"base_num_kv_heads={s.kv_heads}",
                 f"head_dim={s.head_dim}", f"base_mlp_dim={s.d_ff}",
                 f"base_num_decoder_layers={s.layers}", f"vocab_size={s.vocab}",
                 "mlp_activations=[" + ",".join(f"'{a}'" for a in s.activations) + "]",
                 "logits_via_embedding=True"]
    argv += [f"{k}={s.settings[k]}" for k in PASSED if k in s.settings]
    return argv


def compile_row(s: Step) -> tuple[Any, Any]:
    """(compiled, mesh) for the row, through MaxText's train_compile."""
    import jax
    from flax.linen import partitioning as nn_partitioning
    from maxtext.configs import pyconfig
    from maxtext.trainers.pre_train import train, train_compile as tc
    from maxtext.utils import maxtext_utils, sharding

    # as train_compile.main sets them
    jax.config.update("jax_default_prng_impl", "unsafe_rbg")
    os.environ["LIBTPU_INIT_ARGS"] = (os.environ.get("LIBTPU_INIT_ARGS", "")
                                      + " --xla_tpu_spmd_rng_bit_generator_unsafe=true")
    with tempfile.TemporaryDirectory() as out:
        config = pyconfig.initialize(flags(s, out))
        tc.validate_config(config)
        mesh = tc.get_topology_mesh(config)
        args, kwargs, state_shardings, _, model = tc.get_shaped_inputs(mesh, config)
        params_shardings, state_shardings = sharding.maybe_update_params_sharding_with_opt(
            config, state_shardings)
        input_shardings = sharding.build_zero1_input_state_mesh_shardings(
            config, state_shardings, params_shardings)
        data_sharding = sharding.get_input_data_sharding(config, mesh)
        func, in_shard, out_shard, static, donate = (
            maxtext_utils.get_functional_train_with_signature(
                train.train_step, data_sharding, input_shardings, model, config,
                params_shardings))
        compiled = tc.jit_and_compile(
            func, args, kwargs, mesh, in_shard, out_shard, static, donate, config,
            nn_partitioning.axis_rules(config.logical_axis_rules))
    return compiled, mesh
