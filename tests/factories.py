"""factory_boy factories for the rows tests need directly; most tests build data through services."""
import itertools

import factory
from django.contrib.auth import get_user_model

from studies.api.tokens import api_token_create
from studies.models import Corpus, Experiment, System


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"researcher{n}")
    password = factory.django.Password("pw-concord")


class ExperimentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Experiment

    slug = factory.Sequence(lambda n: f"experiment-{n}")
    title = factory.Sequence(lambda n: f"Experiment {n}")
    owner = factory.SubFactory(UserFactory)


class SystemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = System
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"system-{n}")


class CorpusFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Corpus

    slug = factory.Sequence(lambda n: f"corpus-{n}")
    title = factory.LazyAttribute(lambda o: o.slug)
    source_format = "jsonl"


def prolific_id(name: str) -> str:
    """A Prolific-shaped id (24 hexadecimal digits, as the rater links require) standing for ``name``:
    the same name always gives the same id, different names different ids."""
    import hashlib

    return hashlib.sha256(name.encode()).hexdigest()[:24]


def consented_attempt(**begin):
    """A rater's practice attempt (``onboarding.services.practice_attempt_begin``'s arguments) whose rater
    has agreed to the study's terms, as the consent page records it: practice answers come after consent."""
    from studies.onboarding import services as onboarding

    return onboarding.practice_attempt_consent(attempt=onboarding.practice_attempt_begin(**begin))


_token_names = itertools.count(1)


def token_for(user) -> str:
    """A new named API token of ``user``, made through the service (hashed, as every token is): its secret,
    for ``Authorization: Token <secret>``. Each call makes another token (``test token <n>``)."""
    return api_token_create(user=user, name=f"test token {next(_token_names)}").secret
