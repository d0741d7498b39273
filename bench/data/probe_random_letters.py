# ruff: noqa: E501  (rows of data, one a line)
"""Probe of random letters against identifiers (issue 14, policy 2026.11-19), written from the
spec and from no dev file: seeded keys drawn from the 52 letters under token names, 48 random
bytes in base64 bare in prose and under a name (`random.Random`: `secrets.choice` takes no seed),
and identifier look-alikes (long PascalCase class names, Java packages, CSS
class lists, i18n keys) under the same names, which must stay unflagged. Prints the counts.
Run as `PYTHONPATH=. python bench/data/probe_random_letters.py`."""
import base64
import random
import string

from pipelines.policy_rules.secrets import find_secrets

rng = random.Random(20261128)
LETTERS = string.ascii_letters
def key(n): return "".join(rng.choice(LETTERS) for _ in range(n))
rand = [key(rng.choice([20, 24, 32, 40])) for _ in range(300)]
b64 = [base64.b64encode(rng.randbytes(48)).decode() for _ in range(300)]
# token-like names (password-like names such as "secret" take any value, words too, by design)
names = ["api_key", "API_TOKEN", "access_token", "stripe_api_key", "auth_token"]
idents = [
    "AbstractSingletonProxyFactoryBean", "SimpleBeanFactoryAwareAspectInstanceFactory",
    "TransactionAwarePersistenceManagerFactoryProxy", "getUserIdFromAuthTokenHeader",
    "XMLHttpRequestEventTarget", "HTTPSURLConnectionIOError", "NSURLSessionDataDelegate",
    "UIApplicationDidBecomeActiveNotification", "IOErrorIdToUrlMapV", "AWSCredentialsProviderChain",
    "OAuthTokenRefreshHandler", "KubeletGrpcApiKeyRotator", "DjangoRestFrameworkApiKey",
    "org.apache.commons.lang3.StringUtils", "com.google.firebase.auth.FirebaseAuth",
    "io.grpc.netty.shaded.NettyChannelBuilder", "btn btn-primary btn-lg active",
    "col-md-6 offset-md-3 text-center", "settings.apiKey.placeholderText", "errors.auth.tokenExpired",
    "onboarding.welcomeScreen.subtitle", "myApplicationProductionSecretKey", "MyAppApiKeyForStagingEnv",
    "ThisIsNotARealApiKeyJustAnExample", "ReplaceWithYourOwnSecretValue", "useTheVaultSecretHere",
    "SessionCookieSigningKey", "GithubActionsDeployToken", "StripeWebhookSigningSecret",
    "PaymentGatewayIntegrationKey", "LetMeInPleaseOkayThanks", "correcthorsebatterystaple",
    "SomeVeryLongTestingApiKeyValue", "WhatIsTheMeaningOfLifeAndEverything",
]
def hit(text):
    return bool(find_secrets(text))
r = sum(hit(f'{names[i % 5]} = "{v}"') for i, v in enumerate(rand))
bp = sum(hit(f"here it is {v} ok") for v in b64)
bk = sum(hit(f'api_key = "{v}"') for v in b64)
fp = [v for i, v in enumerate(idents) for nm in names if hit(f'{nm} = "{v}"')]
ru = sum(hit(f'{names[i % 5].upper()}={v}') for i, v in enumerate(rand))
fpu = [v for v in idents if " " not in v for nm in names if hit(f'{nm.upper()}={v}')]
print(f"unquoted NAME=value: random letter keys flagged {ru}/300; identifiers flagged {len(fpu)}: {sorted(set(fpu))}")
print(f"random letter keys flagged {r}/300; base64-48 bare in prose {bp}/300; base64-48 as api_key {bk}/300")
print(f"identifier look-alikes flagged {len(fp)}/{len(idents)*5}: {sorted(set(fp))}")
