"""Write the Inspect logs of this folder with Inspect itself (inspect-ai 0.3.x), offline.

Two evaluated models (model-x, model-y), each answering 6 questions in 2 epochs, graded by three
``model_graded_qa`` graders (ga with partial credit). Every model is Inspect's ``mockllm`` provider with scripted
outputs, so no network or API key is needed. Run from the repository root:

    python tests/data/inspect/make_fixture.py

The grades are fixed below, so the table the logs hold is known: tests/test_doctor_inspect.py checks it.
"""

from __future__ import annotations

from pathlib import Path

N_SAMPLES, EPOCHS = 6, 2
#: Per grader, the grade of each (sample, epoch) in Inspect's order, for model-x then model-y.
GRADES = {"model-x": {"ga": "CCPCICCCPCIC", "gb": "CICCCCICCCCI", "gc": "CCCICCCCICCC"},
          "model-y": {"ga": "ICPIICPICIIC", "gb": "IICICIICIIIC", "gc": "CIIICIICIICI"}}


def _mock(name: str, texts: list[str]):
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    outs = []
    for text in texts:
        out = ModelOutput.from_content(model=name, content=text)
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        outs.append(out)
    return get_model(f"mockllm/{name}", custom_outputs=outs)


def main(folder: Path) -> None:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import generate

    for old in folder.glob("*.eval"):
        old.unlink()
    for model, grades in GRADES.items():
        scorers = [model_graded_qa(model=_mock(g, [f"GRADE: {c}" for c in seq]), partial_credit=(g == "ga"))
                   for g, seq in grades.items()]
        task = Task(dataset=[Sample(id=f"q{i}", input=f"Question {i}?", target="yes") for i in range(N_SAMPLES)],
                    solver=generate(), epochs=EPOCHS, scorer=scorers, name="anchor_qa")
        [log] = eval(task, model=_mock(model, ["yes"] * N_SAMPLES * EPOCHS), log_dir=str(folder), display="none",
                     max_samples=1, max_connections=1)
        assert log.status == "success", log.error


if __name__ == "__main__":
    main(Path(__file__).resolve().parent)
