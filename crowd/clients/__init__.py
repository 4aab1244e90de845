"""The two modules that talk to the crowd platforms over the network: ``mturk`` (boto3) and
``prolific`` (REST). Everything else reaches a platform through ``crowd.platforms``."""
