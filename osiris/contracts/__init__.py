"""The contracts: every journal event kind and every tool answer as a typed record.

Each record is a ``TypedDict`` with a docstring on every field (inspect_ai's log schema
is the model). :mod:`osiris.contracts.events` is the journal's event catalogue, each kind
with its version (stamped into the event as ``v``); one module per tool holds that tool's
answers (:mod:`~osiris.contracts.plan`, :mod:`~osiris.contracts.precheck`,
:mod:`~osiris.contracts.observe`, :mod:`~osiris.contracts.recall`,
:mod:`~osiris.contracts.checkpoint`, :mod:`~osiris.contracts.handoff`; the ``hook``
tool's answer is in :mod:`~osiris.contracts.precheck`); :mod:`~osiris.contracts.views`
the resources' task views and the answers the Python API gives client hooks and
``osiris run``; :mod:`~osiris.contracts.shared` the records they share. The tools publish
their answers' JSON schema as ``outputSchema`` (:mod:`osiris.contracts.schemas` writes
it; the server only reads the written file).

This package is a leaf: it imports nothing else from OSIRIS. The records are types only;
the engine reads one thing from them at run time, the event versions.
"""
