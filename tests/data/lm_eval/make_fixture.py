"""Write lm-eval sample and results files with lm-eval 0.4.13's own EvaluationTracker (datasets stubbed: unused on this path).

Needs the lm-eval 0.4.13 wheel unpacked at /tmp/readers-whl/lm (pip download --no-deps lm-eval==0.4.13, unzip) on
PYTHONPATH; run: python make_fixture.py OUT_DIR, then copy OUT_DIR/* here.
"""
import sys, types
for name in ("datasets", "datasets.utils", "datasets.utils.metadata"):
    m = types.ModuleType(name); sys.modules[name] = m
sys.modules["datasets"].load_dataset = None
sys.modules["datasets.utils.metadata"].MetadataConfigs = None
import importlib.util
spec = importlib.util.spec_from_file_location("lm_eval.loggers.evaluation_tracker",
    "/tmp/readers-whl/lm/lm_eval/loggers/evaluation_tracker.py")
import lm_eval  # noqa
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
from lm_eval.utils import hash_string
out = sys.argv[1]
rng = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
for model, shift in (("org/model-a", 0), ("org/model-b", 1)):
    tr = mod.EvaluationTracker(output_path=out)
    tr.general_config_tracker.model_name = model
    tr.general_config_tracker.model_name_sanitized = model.replace("/", "__")
    tr.general_config_tracker.model_source = "hf"
    samples = []
    for doc_id in range(3):
        for filt in ("strict-match", "flexible-extract"):
            acc = rng[(doc_id + shift + (filt == "flexible-extract")) % 6]
            s = {"doc_id": doc_id, "doc": {"question": f"q{doc_id}", "answer": str(doc_id)}, "target": str(doc_id),
                 "arguments": [(f"Question: q{doc_id}", {"until": ["\n"]})], "resps": [[f"ans {doc_id}"]],
                 "filtered_resps": [f"{doc_id}"], "filter": filt, "metrics": ["exact_match"],
                 "doc_hash": hash_string(str(doc_id)), "prompt_hash": hash_string(f"q{doc_id}"),
                 "target_hash": hash_string(str(doc_id)), "exact_match": acc}
            samples.append(s)
    results = {"results": {"gsm8k": {"alias": "gsm8k", "exact_match,strict-match": 0.5}},
               "config": {"model": "hf", "model_args": f"pretrained={model}"}}
    tr.save_results_aggregated(results=results, samples={"gsm8k": [dict(s) for s in samples]})
    tr.save_results_samples(task_name="gsm8k", samples=samples)
print("done")
