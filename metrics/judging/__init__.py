"""LLM judges: a chat model over an OpenAI-compatible endpoint rates a response (turn level) or a whole
dialogue on one of the study's own criteria, beside the learned metrics.

- ``prompt``: the judge's prompt from the criterion (question, help, scale or labels), with G-Eval's
  form (Liu et al. 2023: the task, the criterion, evaluation steps, the input, then the score alone);
- ``parse``: the answer read strictly (a refusal or an unparseable answer is missing, never 0) and, where
  the server returns log-probabilities, G-Eval's probability-weighted score sum_k p(k) * k;
- ``client``: one judgment over HTTP (temperature 0, retries with backoff on 429 and 5xx honouring
  Retry-After, one deadline, the SSRF-checked connection of ``studies.chat``) and many at once within a
  concurrency and a requests-per-minute limit;
- ``local_judge``: a rule-based OpenAI-compatible judge server on loopback, for the tests and the demo.
- ``services``: what a judge needs of the database while it runs: the answers' cache, the endpoint it may
  call with its key (checked again at every run), a study criterion as a judge sees it, the cost.

Only ``services`` imports Django. Below the implementations (the ``llm_judge`` metric calls ``run``); making a
judge, which registers the metric, is ``metrics.scoring.judges``'s."""
