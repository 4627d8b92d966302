from __future__ import annotations

from colocate.constructs.image_prepull import pull_container_name
from colocate.model.validate import DNS_LABEL


def test_init_containers_are_named_after_their_image():
    assert pull_container_name("harbor.example.com/ml/tf-mnist:2.11.0") == "pull-ml-tf-mnist-2-11-0"
    assert pull_container_name("harbor.example.com/ml/tf@sha256:ab12") == "pull-ml-tf-sha256-ab12"


def test_a_long_name_stays_a_dns_label_and_distinct():
    a = pull_container_name("harbor.example.com/research/" + "very-long-project-name/" * 3 + "trainer:2024.10.01-a")
    b = pull_container_name("harbor.example.com/research/" + "very-long-project-name/" * 3 + "trainer:2024.10.01-b")
    assert len(a) <= 63 and DNS_LABEL.match(a) and a != b
