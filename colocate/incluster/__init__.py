"""Code that runs in the cluster from the Dockerfile's image: the API client (``kube``),
``colocate offline pause|resume`` (``offline``) and the resubmitter (``resubmit/``). It imports
neither the generator nor the checker."""
