// celcost runs ValidatingAdmissionPolicies' CEL the way kube-apiserver 1.28 does and prints what
// each evaluation costs. It uses k8s.io/apiserver's own admission CEL code at the version the
// simulation's API server runs (the compiler, the 1.27 compatibility environment new expressions
// are compiled in, the lazily evaluated variables and the runtime cost accounting), so the costs
// are the API server's: pkg/admission/plugin/validatingadmissionpolicy/validator.go Validate
// charges validations and then messageExpressions against one RuntimeCELCostBudget per binding,
// and every expression against PerCallLimit (pkg/apis/cel/config.go).
//
// stdin: a JSON list of {"policy": <ValidatingAdmissionPolicy>, "object": <object>,
// "resource": "<plural>", "namespace": <Namespace or null>}; stdout: a JSON list of results.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/api/admissionregistration/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	vap "k8s.io/apiserver/pkg/admission/plugin/validatingadmissionpolicy"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
)

type input struct {
	Policy    v1beta1.ValidatingAdmissionPolicy `json:"policy"`
	Object    map[string]interface{}            `json:"object"`
	Resource  string                            `json:"resource"`
	Namespace *corev1.Namespace                 `json:"namespace"`
}

type result struct {
	Policy string `json:"policy"`
	Object string `json:"object"`
	// Cost of the validations (with the variables they evaluate), then of the messageExpressions
	// when a validation failed; Budget is what one binding may spend, Limit what one expression may.
	ValidationCost int64    `json:"validationCost"`
	MessageCost    int64    `json:"messageCost"`
	Budget         int64    `json:"budget"`
	Limit          int64    `json:"limit"`
	Allowed        bool     `json:"allowed"`
	Messages       []string `json:"messages"`
	Errors         []string `json:"errors"`
}

func main() {
	var inputs []input
	if err := json.NewDecoder(os.Stdin).Decode(&inputs); err != nil {
		fmt.Fprintln(os.Stderr, "celcost: stdin is not a JSON list of cases:", err)
		os.Exit(2)
	}
	out := make([]result, 0, len(inputs))
	for _, in := range inputs {
		out = append(out, run(in))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		os.Exit(1)
	}
}

func run(in input) result {
	obj := &unstructured.Unstructured{Object: in.Object}
	r := result{Policy: in.Policy.Name, Object: obj.GetKind() + "/" + obj.GetNamespace() + "/" + obj.GetName(),
		Budget: celconfig.RuntimeCELCostBudget, Limit: celconfig.PerCallLimit, Allowed: true,
		Messages: []string{}, Errors: []string{}}
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		r.Errors = append(r.Errors, err.Error())
		return r
	}
	// As controller_reconcile.go compiles a policy without paramKind: validations may use the
	// authorizer, messageExpressions may not; NewExpressions is the environment a create is checked in.
	withAuthz := plugincel.OptionalVariableDeclarations{HasParams: false, HasAuthorizer: true}
	withoutAuthz := plugincel.OptionalVariableDeclarations{HasParams: false, HasAuthorizer: false}
	variables := []plugincel.NamedExpressionAccessor{}
	for _, v := range in.Policy.Spec.Variables {
		variables = append(variables, &vap.Variable{Name: v.Name, Expression: v.Expression})
	}
	compiler.CompileAndStoreVariables(variables, withAuthz, environment.NewExpressions)
	validations, messages := []plugincel.ExpressionAccessor{}, []plugincel.ExpressionAccessor{}
	for _, v := range in.Policy.Spec.Validations {
		validations = append(validations, &vap.ValidationCondition{Expression: v.Expression, Message: v.Message})
		// No messageExpression is a nil placeholder, as the API server compiles it
		// (validatingadmissionpolicy/controller_reconcile.go convertv1beta1MessageExpressions).
		var message plugincel.ExpressionAccessor
		if v.MessageExpression != "" {
			message = &vap.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
		messages = append(messages, message)
	}
	validationFilter := compiler.Compile(validations, withAuthz, environment.NewExpressions)
	messageFilter := compiler.Compile(messages, withoutAuthz, environment.NewExpressions)

	gvk := obj.GroupVersionKind()
	gvr := gvk.GroupVersion().WithResource(in.Resource)
	// Every request the API server admits has a user; dist/'s objects are created by Argo CD's
	// application controller (request.userInfo.username, which a policy may read).
	applier := &user.DefaultInfo{Name: "system:serviceaccount:argocd:argocd-application-controller"}
	attrs := admission.NewAttributesRecord(obj, nil, gvk, obj.GetNamespace(), obj.GetName(), gvr, "",
		admission.Create, &metav1.CreateOptions{}, false, applier)
	versioned := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: gvk, VersionedObject: obj}
	request := plugincel.CreateAdmissionRequest(attrs, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(gvk))
	namespace := plugincel.CreateNamespaceObject(in.Namespace)
	ctx := context.Background()

	results, remaining, err := validationFilter.ForInput(ctx, versioned, request, plugincel.OptionalVariableBindings{},
		namespace, celconfig.RuntimeCELCostBudget)
	if err != nil {
		r.Errors = append(r.Errors, err.Error())
		return r
	}
	r.ValidationCost = celconfig.RuntimeCELCostBudget - remaining
	failed := false
	for _, res := range results {
		if res.Error != nil {
			r.Errors = append(r.Errors, res.Error.Error())
			r.Allowed = false
		} else if res.EvalResult != nil && res.EvalResult.Value() != true {
			r.Allowed, failed = false, true
		}
	}
	if failed {
		msgResults, left, err := messageFilter.ForInput(ctx, versioned, request, plugincel.OptionalVariableBindings{},
			namespace, remaining)
		if err != nil {
			r.Errors = append(r.Errors, err.Error())
			return r
		}
		r.MessageCost = remaining - left
		for _, res := range msgResults {
			if res.Error != nil {
				r.Errors = append(r.Errors, res.Error.Error())
			} else if res.EvalResult != nil {
				r.Messages = append(r.Messages, fmt.Sprint(res.EvalResult.Value()))
			}
		}
	}
	return r
}
