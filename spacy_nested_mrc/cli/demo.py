"""``demo``: train on the sample shipped with the package, score it, and predict a text."""
import random
from pathlib import Path
from typing import Optional

from ._util import Opt, app, print_entities, show_progress

DEMO_TEXT = (
    "Activation of the IL-2 gene in human T cells requires binding of NF-kappa B "
    "to the IL-2 promoter, while Jurkat cells express c-fos mRNA ."
)


@app.command("demo")
def demo_cli(
    output: Path = Opt(Path("training/demo"), "--output", help="where to save the pipeline"),
    epochs: int = Opt(8, "--epochs", help="passes over the sample"),
    batch_size: int = Opt(8, "--batch-size", help="sentences per update"),
    learn_rate: float = Opt(1e-4, "--learn-rate", help="Adam learning rate"),
    text: str = Opt(DEMO_TEXT, "--text", help="text to run the trained pipe on"),
    seed: int = Opt(0, "--seed", help="random seed of the initialization and the shuffling"),
    encoder: Optional[str] = Opt(
        None,
        "--encoder",
        help="Hugging Face encoder (hub name or local folder); default: the config's "
        "embedded all-MiniLM-L6-v2",
    ),
) -> int:
    """Train nested_mrc_ner (default config: the packed MRC, the label index as its question,
    on the embedded all-MiniLM-L6-v2)
    on the sample shipped with the package, save it, score it on the sample's dev part and
    print the nested entities it finds in a text."""
    import spacy
    from spacy.training import Example
    from spacy.util import fix_random_seed, minibatch
    from tqdm import tqdm
    from wasabi import msg

    from ..corpora.jsonl import SAMPLE_DIR, create_jsonl_reader

    fix_random_seed(seed)
    nlp = spacy.blank("en")
    model = {} if encoder is None else {"model": {"encoder": {"name": encoder}}}
    nlp.add_pipe("nested_mrc_ner", config=model)
    train = list(create_jsonl_reader(SAMPLE_DIR / "train.jsonl")(nlp))
    dev = list(create_jsonl_reader(SAMPLE_DIR / "dev.jsonl")(nlp))
    n_entities = sum(len(eg.reference.spans["nested"]) for eg in train)
    msg.info(
        f"Demo: training nested_mrc_ner (packed MRC, index questions, encoder "
        f"{encoder or 'all-MiniLM-L6-v2, embedded'}) on the sample shipped with the "
        f"package: {len(train)} GENIA sentences ({n_entities} entities), {epochs} epochs of "
        f"batches of {batch_size}, then scoring it on {len(dev)} sample dev sentences. A "
        "model trained on so little is rough: see the README for training on all of GENIA."
    )
    msg.text("Loading the encoder ...")
    optimizer = nlp.initialize(lambda: train)
    optimizer.learn_rate = learn_rate
    limit = nlp.get_pipe("nested_mrc_ner").model.attrs.get("span_limit", 0)
    if limit:
        msg.text(f"Spans are at most {limit} tokens: the longest training entity plus a margin")
    rng = random.Random(seed)
    steps = epochs * -(-len(train) // batch_size)
    with tqdm(total=steps, unit="batch", desc="Training", dynamic_ncols=True,
              disable=not show_progress()) as bar:
        for epoch in range(epochs):
            rng.shuffle(train)
            losses: dict = {}
            for batch in minibatch(train, batch_size):
                nlp.update(batch, sgd=optimizer, losses=losses)
                bar.update(1)
            bar.write(f"epoch {epoch + 1}/{epochs}  loss {losses['nested_mrc_ner']:.3f}")
    scores = nlp.evaluate([Example(eg.predicted, eg.reference) for eg in dev])
    print(f"sample dev: P {scores['spans_nested_p']:.3f}  R {scores['spans_nested_r']:.3f}  "
          f"F {scores['spans_nested_f']:.3f}")
    output.mkdir(parents=True, exist_ok=True)
    nlp.to_disk(output)
    print(f"Saved to {output}")
    print_entities(nlp(text))
    return 0
