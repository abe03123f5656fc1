"""Write DeepEval test-run JSON files with DeepEval 4.3.1's own TestRun / LLMApiTestCase / MetricData classes.

Needs deepeval==4.3.1 importable (pip install --target DIR deepeval==4.3.1; PYTHONPATH=DIR); run:
python make_fixture.py OUT_DIR, then copy OUT_DIR/*.json here.
"""
import sys
from deepeval.test_run.test_run import TestRun
from deepeval.test_run.api import LLMApiTestCase
from deepeval.tracing.api import MetricData
out = sys.argv[1]
judges = ("gpt-4o", "claude-3-5-sonnet")
for mi, model in enumerate(("model-a", "model-b")):
    cases = []
    for c in range(3):
        md = []
        for ji, judge in enumerate(judges):
            for metric in ("Answer Relevancy", "Correctness [GEval]"):
                score = round(0.1 * ((c + 2 * mi + ji + (metric[0] == "C")) % 8) + 0.2, 2)
                md.append(MetricData(name=metric, threshold=0.5, success=score >= 0.5, score=score,
                                     reason="because", evaluationModel=judge, evaluationCost=0.001))
        cases.append(LLMApiTestCase(name=f"test_case_{c}", input=f"question {c}", actualOutput=f"answer {c} from {model}",
                                    success=all(m.success for m in md), metricsData=md, runDuration=0.5, order=c))
    run = TestRun(testFile="test_chat.py", testCases=cases, hyperparameters={"model": model, "prompt": "v1"})
    with open(f"{out}/test_run_{model}.json", "w") as fh:
        run.save(fh)
print("ok")
