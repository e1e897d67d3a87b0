"""The vectorised step models score every layout of a search at once; each row must be exactly what the
one-layout model gives for that layout (the searches' choices and every published figure depend on it)."""

import numpy as np
import pytest

from tcocalc.catalog.accelerators import hardware
from tcocalc.catalog.calibration import calibration_for
from tcocalc.catalog.models import model
from tcocalc.roofline.forward import forward_cost
from tcocalc.roofline.parallel import Layouts
from tcocalc.roofline.serving import candidate_serving_layouts
from tcocalc.roofline.training import candidate_layouts, training_step, training_steps


@pytest.mark.parametrize("name,hw,gpus,seq", [("Qwen3-235B-A22B", "H200", 64, 12_000.0),
                                              ("Llama-3.1-405B", "H100", 1024, 32_768.0),
                                              ("DeepSeek-V3", "GB200", 256, 4_096.0)])
def test_training_steps_rows_are_the_one_layout_step(name, hw, gpus, seq):
    m, acc = model(name), hardware(hw)
    cal = calibration_for(acc)
    pars = list(candidate_layouts(m, acc, gpus, seq))
    lay = Layouts.of(pars)
    gb = np.maximum(1_048_576 / seq, lay.dp.astype(float))
    for offload in (False, True):
        many = training_steps(m, acc, cal, lay, seq=seq, global_batch=gb, precision="bf16", offload=offload)
        assert many["fits"].any()
        for i, par in enumerate(pars):
            one = training_step(m, acc, cal, par, seq=seq, global_batch=float(gb[i]), precision="bf16",
                                offload=offload)
            assert (one is None) == (not many["fits"][i]), par.label()
            if one is not None:
                assert one["step_s"] == many["step_s"][i] and one["memory"] == many["memory"][i], par.label()
            else:
                assert many["step_s"][i] == np.inf


@pytest.mark.parametrize("name,hw,precision", [("Qwen3-235B-A22B", "H200", "fp8"), ("DeepSeek-V3", "H100", "fp8"),
                                               ("Llama-3.3-70B", "B200", "fp4")])
def test_forward_cost_over_layouts_is_each_layouts_cost(name, hw, precision):
    m, acc = model(name), hardware(hw)
    cal = calibration_for(acc)
    pars = [q for q in candidate_serving_layouts(m, acc) if q.pp <= 2]
    grid = np.geomspace(1, 512, 7)
    kw = dict(precision=precision, kv_precision="fp8", dec_ctx=3_000.0, pre_tokens=1_000.0)
    many = forward_cost(m, acc, cal, Layouts.of(pars).column(), dec_seqs=np.tile(grid, (len(pars), 1)),
                        pre_seqs=np.tile(grid / 2_000, (len(pars), 1)), **kw)
    for i, par in enumerate(pars):
        one = forward_cost(m, acc, cal, par, dec_seqs=grid, pre_seqs=grid / 2_000, **kw)
        for key in ("stage_s", "comm_s", "cbound_s", "mbound_s", "overhead_s"):
            np.testing.assert_array_equal(many[key][i], one[key], err_msg=f"{par.label()} {key}")
