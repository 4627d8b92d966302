"""The rule files of ``policies/rules/`` as data (``files``) and the admission policies built from
them (``admission``), shared by the checker, the generator and the simulation."""
